import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { DELIVERY_QUEUE, DeliveryQueue } from './delivery-queue.js';

/** The BullMQ connection and the delivery queue, shared by the api, the worker and the CLI. */
@Module({
  imports: [
    BullModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        // Producer only (the worker has its own connection): fail fast while Redis is away, since
        // Postgres already holds the delivery and the sweeper enqueues it once Redis is back.
        connection: { url: config.redisUrl, enableOfflineQueue: false, maxRetriesPerRequest: 1 },
        prefix: config.queuePrefix,
      }),
    }),
    BullModule.registerQueue({ name: DELIVERY_QUEUE }),
  ],
  providers: [DeliveryQueue],
  exports: [DeliveryQueue, BullModule],
})
export class DeliveryQueueModule {}
