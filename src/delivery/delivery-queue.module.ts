import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { DELIVERY_QUEUE, DeliveryQueue, producerConnection } from './delivery-queue.js';

/** The BullMQ connection and the delivery queue, shared by the api, the worker and the CLI. */
@Module({
  imports: [
    BullModule.forRootAsync({
      inject: [APP_CONFIG],
      // Producer only: the worker has its own connection.
      useFactory: (config: AppConfig) => ({
        connection: producerConnection(config.redisUrl),
        prefix: config.queuePrefix,
      }),
    }),
    BullModule.registerQueue({ name: DELIVERY_QUEUE }),
  ],
  providers: [DeliveryQueue],
  exports: [DeliveryQueue, BullModule],
})
export class DeliveryQueueModule {}
