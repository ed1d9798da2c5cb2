import { Module } from '@nestjs/common';
import { QueueConnectionModule } from '../core/redis/queue-connection.module.js';
import { DeliveryQueue } from './delivery-queue.js';
import { HostStates } from './host-state.js';

/** The delivery queues, shared by the api, the worker and the CLI; and the hosts' admission state to read. */
@Module({
  imports: [QueueConnectionModule],
  providers: [DeliveryQueue, HostStates],
  exports: [DeliveryQueue, HostStates],
})
export class DeliveryQueueModule {}
