import { Logger } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import type { RedisClient } from '../redis/redis.module.js';

// Fixed window, one atomic round trip: the first hit starts the window, every replica counts in the same key.
const HIT = `
  local hits = redis.call('INCR', KEYS[1])
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl < 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[1])
    ttl = tonumber(ARGV[1])
  end
  return {hits, ttl}`;

const WARN_EVERY_MS = 60_000;

type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;
type CounterRedis = RedisClient & { hitWindow(key: string, windowMs: number): Promise<[number, number]> };

/**
 * @nestjs/throttler's counts in Redis, shared by every api replica on the same REDIS_URL and
 * QUEUE_PREFIX. Hand-written: no maintained storage package supports throttler 6 on ioredis 5.
 * While Redis is unreachable a hit counts as zero: a Redis outage must not become an API outage.
 */
export class RedisThrottlerStorage implements ThrottlerStorage {
  private readonly logger = new Logger('RateLimit');
  private readonly redis: CounterRedis;
  private lastWarnAt = 0;

  constructor(
    redis: RedisClient,
    private readonly prefix: string,
  ) {
    this.redis = redis as CounterRedis;
    this.redis.defineCommand('hitWindow', { numberOfKeys: 1, lua: HIT });
  }

  /** `key` is the guard's `<throttler>:<tracker>`; a count over `limit` is blocked until the window ends. */
  async increment(key: string, ttl: number, limit: number): Promise<ThrottlerStorageRecord> {
    try {
      const [totalHits, resetMs] = await this.redis.hitWindow(`${this.prefix}:ratelimit:${key}`, ttl);
      const seconds = Math.max(1, Math.ceil(resetMs / 1000));
      const isBlocked = totalHits > limit;
      return { totalHits, timeToExpire: seconds, isBlocked, timeToBlockExpire: isBlocked ? seconds : 0 };
    } catch (error) {
      this.warn(error as Error);
      return { totalHits: 0, timeToExpire: Math.ceil(ttl / 1000), isBlocked: false, timeToBlockExpire: 0 };
    }
  }

  private warn(error: Error): void {
    if (Date.now() - this.lastWarnAt < WARN_EVERY_MS) return;
    this.lastWarnAt = Date.now();
    this.logger.warn(`Rate limit counters unavailable, requests are not limited: ${error.message}`);
  }
}
