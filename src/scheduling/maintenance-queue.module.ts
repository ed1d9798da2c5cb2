import { BullModule, InjectQueue } from '@nestjs/bullmq';
import { Injectable, Module } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { QueueConnectionModule } from '../core/redis/queue-connection.module.js';
import { MAINTENANCE_QUEUE } from './scheduled-job.js';

/** The maintenance queue: its job schedulers and the jobs they make. */
@Injectable()
export class MaintenanceQueue {
  constructor(@InjectQueue(MAINTENANCE_QUEUE) readonly queue: Queue) {
    // Its connection's errors are logged by RedisClients; without a listener BullMQ prints each to stderr.
    queue.on('error', () => undefined);
  }
}

/** The maintenance queue, for the processes that run scheduled work and for the queue dashboard. */
@Module({
  imports: [QueueConnectionModule, BullModule.registerQueue({ name: MAINTENANCE_QUEUE })],
  providers: [MaintenanceQueue],
  exports: [MaintenanceQueue],
})
export class MaintenanceQueueModule {}
