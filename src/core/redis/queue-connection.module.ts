import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import type { AppConfig } from '../config/config.js';
import { APP_CONFIG } from '../config/config.module.js';
import { RedisClients, RedisModule } from './redis.module.js';

/** BullMQ's settings for every queue a process registers: the producer connection and QUEUE_PREFIX. */
@Module({
  imports: [
    RedisModule,
    BullModule.forRootAsync({
      inject: [APP_CONFIG, RedisClients],
      // Producer only: the workers have their own connections. RedisClients owns this one and drops it at
      // shutdown, where BullMQ's close would send QUIT and wait for a Redis that may never answer.
      useFactory: (config: AppConfig, clients: RedisClients) => ({
        connection: clients.get('queue'),
        prefix: config.queuePrefix,
      }),
    }),
  ],
})
export class QueueConnectionModule {}
