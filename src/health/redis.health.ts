import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { Redis } from 'ioredis';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';

/**
 * Pings REDIS_URL on its own connection with no offline queue: while Redis is down a ping fails
 * at once instead of waiting in the queue client's backlog until Redis returns.
 */
@Injectable()
export class RedisHealthIndicator implements OnModuleDestroy {
  private readonly client: Redis;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly indicator: HealthIndicatorService,
  ) {
    this.client = new Redis(config.redisUrl, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: 2_000,
      retryStrategy: (times) => Math.min(times * 200, 2_000),
    });
    this.client.on('error', () => undefined); // reported by the check, not as an unhandled event
  }

  pingCheck(key: string, timeoutMs: number) {
    return this.indicator
      .check(key)
      .attempt(async () => {
        await this.client.ping();
      })
      .withTimeout(timeoutMs);
  }

  onModuleDestroy(): void {
    this.client.disconnect();
  }
}
