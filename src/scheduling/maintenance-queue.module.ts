import { BullModule, InjectQueue } from '@nestjs/bullmq';
import { Injectable, Module } from '@nestjs/common';
import type { Queue } from 'bullmq';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { QueueConnectionModule } from '../core/redis/queue-connection.module.js';
import { QueueLayout } from '../core/redis/queue-layout.js';
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
  imports: [
    QueueConnectionModule,
    BullModule.registerQueueAsync({
      name: MAINTENANCE_QUEUE,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({ prefix: QueueLayout.of(config).maintenancePrefix }),
    }),
  ],
  providers: [MaintenanceQueue],
  exports: [MaintenanceQueue],
})
export class MaintenanceQueueModule {}
