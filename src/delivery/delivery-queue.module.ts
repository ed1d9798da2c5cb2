import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { RedisClients, RedisModule } from '../core/redis/redis.module.js';
import { DELIVERY_QUEUE, DeliveryQueue } from './delivery-queue.js';
import { HostStates } from './host-state.js';

/** The BullMQ connection and the delivery queue, shared by the api, the worker and the CLI; and hosts' admission state to read. */
@Module({
  imports: [
    RedisModule,
    BullModule.forRootAsync({
      inject: [APP_CONFIG, RedisClients],
      // Producer only: the worker has its own connections. RedisClients owns this one and drops it at
      // shutdown, where BullMQ's close would send QUIT and wait for a Redis that may never answer.
      useFactory: (config: AppConfig, clients: RedisClients) => ({
        connection: clients.get('queue'),
        prefix: config.queuePrefix,
      }),
    }),
    BullModule.registerQueue({ name: DELIVERY_QUEUE }),
  ],
  providers: [DeliveryQueue, HostStates],
  exports: [DeliveryQueue, HostStates, BullModule],
})
export class DeliveryQueueModule {}
