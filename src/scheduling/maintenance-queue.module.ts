import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { QueueConnectionModule } from '../core/redis/queue-connection.module.js';
import { MAINTENANCE_QUEUE } from './scheduled-job.js';

/** The maintenance queue, for the processes that run scheduled work and for the queue dashboard. */
@Module({
  imports: [QueueConnectionModule, BullModule.registerQueue({ name: MAINTENANCE_QUEUE })],
  exports: [BullModule],
})
export class MaintenanceQueueModule {}
