import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import type { Redis } from 'ioredis';
import { RedisClients } from '../core/redis/redis.module.js';

/**
 * Pings REDIS_URL on its own connection with no offline queue: while Redis is down a ping fails
 * at once instead of waiting in the queue client's backlog until Redis returns.
 */
@Injectable()
export class RedisHealthIndicator {
  private readonly client: Redis;

  constructor(
    clients: RedisClients,
    private readonly indicator: HealthIndicatorService,
  ) {
    this.client = clients.get('health');
  }

  pingCheck(key: string, timeoutMs: number) {
    return this.indicator
      .check(key)
      .attempt(async () => {
        await this.client.ping();
      })
      .withTimeout(timeoutMs);
  }
}
