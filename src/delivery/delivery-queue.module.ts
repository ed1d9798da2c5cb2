import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { QueueConnectionModule } from '../core/redis/queue-connection.module.js';
import { DELIVERY_QUEUE, DeliveryQueue } from './delivery-queue.js';
import { HostStates } from './host-state.js';

/** The delivery queue, shared by the api, the worker and the CLI; and the hosts' admission state to read. */
@Module({
  imports: [QueueConnectionModule, BullModule.registerQueue({ name: DELIVERY_QUEUE })],
  providers: [DeliveryQueue, HostStates],
  exports: [DeliveryQueue, HostStates, BullModule],
})
export class DeliveryQueueModule {}
