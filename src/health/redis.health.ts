import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { once } from 'node:events';
import { RedisClients, type RedisClient } from '../core/redis/redis.module.js';

// The connection is being made (just after start): a ping would fail at once with no offline queue.
const CONNECTING = new Set(['connecting', 'connect']);

/**
 * Pings REDIS_URL on its own connection with no offline queue: while Redis is down a ping fails
 * at once instead of waiting in the queue client's backlog until Redis returns. While the connection
 * is still being made (right after start) the check waits for it, within its timeout, rather than
 * reporting a Redis that is up as down.
 */
@Injectable()
export class RedisHealthIndicator {
  private readonly client: RedisClient;

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
        // Rejects on the connection's next error (Redis down), or when the check's time is up.
        if (CONNECTING.has(this.client.status)) {
          await once(this.client, 'ready', { signal: AbortSignal.timeout(timeoutMs) });
        }
        await this.client.ping();
      })
      .withTimeout(timeoutMs);
  }
}
