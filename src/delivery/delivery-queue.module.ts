import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { QueueConnectionModule } from '../core/redis/queue-connection.module.js';
import { DELIVERY_QUEUE, DeliveryQueue } from './delivery-queue.js';

/** The delivery queue, shared by the api, the worker and the CLI. */
@Module({
  imports: [QueueConnectionModule, BullModule.registerQueue({ name: DELIVERY_QUEUE })],
  providers: [DeliveryQueue],
  exports: [DeliveryQueue, BullModule],
})
export class DeliveryQueueModule {}
