import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { Redis } from 'ioredis';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';

// A slot is a sorted-set member scored by its expiry: slots of a killed worker free themselves.
const ACQUIRE = `
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
  if redis.call('ZSCORE', KEYS[1], ARGV[4]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
    redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
    redis.call('PEXPIRE', KEYS[1], ARGV[5])
    return 1
  end
  return 0`;

type LimiterRedis = Redis & {
  acquireSlot(key: string, now: number, expiresAt: number, cap: number, holder: string, ttl: number): Promise<number>;
};

/**
 * Caps attempts in flight per destination host across all workers, so one slow or dead receiver
 * cannot take every worker slot from the healthy ones.
 */
@Injectable()
export class DestinationLimiter implements OnModuleDestroy {
  private readonly redis: LimiterRedis;
  private readonly slotTtlMs: number;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    // Auto-pipelining: the slots taken and freed by concurrent jobs go to Redis in one write.
    this.redis = new Redis(config.redisUrl, {
      maxRetriesPerRequest: 1,
      lazyConnect: true,
      enableAutoPipelining: true,
    }) as LimiterRedis;
    this.redis.defineCommand('acquireSlot', { numberOfKeys: 1, lua: ACQUIRE });
    this.redis.on('error', () => undefined); // reported by the operations that fail
    this.slotTtlMs = config.deliveryTimeoutMs * 2 + 5_000;
  }

  get enabled(): boolean {
    return this.config.maxInFlightPerDestination > 0;
  }

  private key(destination: string): string {
    return `${this.config.queuePrefix}:inflight:${destination}`;
  }

  async acquire(destination: string, holder: string): Promise<boolean> {
    const now = Date.now();
    const cap = this.config.maxInFlightPerDestination;
    const ttl = this.slotTtlMs;
    return (await this.redis.acquireSlot(this.key(destination), now, now + ttl, cap, holder, ttl)) === 1;
  }

  async release(destination: string, holder: string): Promise<void> {
    await this.redis.zrem(this.key(destination), holder).catch(() => undefined);
  }

  async onModuleDestroy(): Promise<void> {
    this.redis.disconnect();
  }
}
