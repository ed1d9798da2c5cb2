import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Redis } from 'ioredis';
import type { AppConfig } from '../config/config.js';
import { APP_CONFIG } from '../config/config.module.js';

// Fixed window, one atomic round trip: the first hit starts the window, every replica counts in the same key.
const HIT = `
  local hits = redis.call('INCR', KEYS[1])
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl < 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[1])
    ttl = tonumber(ARGV[1])
  end
  return {hits, ttl}`;

const COMMAND_TIMEOUT_MS = 500;
const WARN_EVERY_MS = 60_000;

type CounterRedis = Redis & { hitWindow(key: string, windowMs: number): Promise<[number, number]> };

export interface WindowCount {
  hits: number;
  /** Milliseconds until the window ends and the count starts again. */
  resetMs: number;
}

/**
 * Request counters in Redis, shared by every api replica on the same REDIS_URL and QUEUE_PREFIX.
 * While Redis is unreachable a hit counts as zero: a Redis outage must not become an API outage.
 */
@Injectable()
export class RateLimitCounters implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('RateLimit');
  private readonly redis: CounterRedis;
  private lastWarnAt = 0;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    // No offline queue: while Redis is away a hit fails at once instead of holding the request.
    this.redis = new Redis(config.redisUrl, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: 2_000,
      retryStrategy: (times) => Math.min(times * 200, 2_000),
    }) as CounterRedis;
    this.redis.defineCommand('hitWindow', { numberOfKeys: 1, lua: HIT });
    this.redis.on('error', () => undefined); // reported by hit, at most once a minute
  }

  /** Connected before the first request when Redis is up; when it is not, the client keeps retrying. */
  async onModuleInit(): Promise<void> {
    if (this.config.rateLimit.perMinute > 0 || this.config.rateLimit.perSecond > 0) {
      await this.redis.connect().catch((error: Error) => this.warn(error));
    }
  }

  async hit(window: string, tracker: string, windowMs: number): Promise<WindowCount> {
    try {
      const [hits, resetMs] = await this.redis.hitWindow(
        `${this.config.queuePrefix}:ratelimit:${window}:${tracker}`,
        windowMs,
      );
      return { hits, resetMs };
    } catch (error) {
      this.warn(error as Error);
      return { hits: 0, resetMs: windowMs };
    }
  }

  private warn(error: Error): void {
    if (Date.now() - this.lastWarnAt < WARN_EVERY_MS) return;
    this.lastWarnAt = Date.now();
    this.logger.warn(`Rate limit counters unavailable, requests are not limited: ${error.message}`);
  }

  onModuleDestroy(): void {
    this.redis.disconnect();
  }
}
