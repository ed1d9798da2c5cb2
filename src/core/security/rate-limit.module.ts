import { Module } from '@nestjs/common';
import type { ThrottlerOptions } from '@nestjs/throttler';
import type { AppConfig } from '../config/config.js';
import { APP_CONFIG } from '../config/config.module.js';
import { RedisClients } from '../redis/redis.module.js';
import { RedisThrottlerStorage } from './redis-throttler.storage.js';

// @nestjs/throttler is CommonJS requiring the ES module @nestjs/common: loaded once that has been
// evaluated, or the test runner's loader sees a require(esm) cycle.
const { ThrottlerModule } = await import('@nestjs/throttler');

/** Throttler names: per client IP (before authentication), per API key per minute and per second. */
export const PER_IP = 'ip';
export const PER_KEY_MINUTE = 'default'; // the unsuffixed X-RateLimit-* headers describe this window
export const PER_KEY_SECOND = 'second';

/**
 * The api's request limits (0 turns one off); the guards that apply them (auth/rate-limit.guards.ts, as
 * they skip the public routes and count per API key) are registered in AppModule, in order.
 */
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
