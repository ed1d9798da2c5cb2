import { Module } from '@nestjs/common';
import type { ThrottlerOptions } from '@nestjs/throttler';
import type { AppConfig } from '../config/config.js';
import { APP_CONFIG } from '../config/config.module.js';
import { RedisClients } from '../redis/redis.module.js';
import { PER_IP, PER_KEY_MINUTE, PER_KEY_SECOND } from './rate-limit.guards.js';
import { RedisThrottlerStorage } from './redis-throttler.storage.js';

const { ThrottlerModule } = await import('@nestjs/throttler'); // see rate-limit.guards.ts

/** The api's request limits (0 turns one off); the guards that apply them are registered in AppModule, in order. */
@Module({
  imports: [
    ThrottlerModule.forRootAsync({
      inject: [APP_CONFIG, RedisClients],
      useFactory: (config: AppConfig, clients: RedisClients) => ({
        storage: new RedisThrottlerStorage(clients.get('rate-limit'), config.queuePrefix),
        throttlers: [
          { name: PER_IP, ttl: 60_000, limit: config.rateLimit.perIpPerMinute, setHeaders: false },
          { name: PER_KEY_SECOND, ttl: 1_000, limit: config.rateLimit.perSecond, setHeaders: false },
          { name: PER_KEY_MINUTE, ttl: 60_000, limit: config.rateLimit.perMinute },
        ].filter((t: ThrottlerOptions & { limit: number }) => t.limit > 0),
      }),
    }),
  ],
  exports: [ThrottlerModule],
})
export class RateLimitModule {}
