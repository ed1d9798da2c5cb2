import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { RedisClients } from '../core/redis/redis.module.js';

// KEYS: slots (sorted set of `deliveryId:lockToken` scored by expiry, so a killed worker's slots free
// themselves), breaker (hash), waiters (list of job ids). Returns {1} when admitted, else {0, until}:
// until > 0 is when the destination may be tried again (breaker open), -1 means "woken by a release".
const ACQUIRE = `
  local now = tonumber(ARGV[1])
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  local openUntil = tonumber(redis.call('HGET', KEYS[2], 'open_until') or '0')
  if openUntil > now then return {0, openUntil} end
  local probing = false
  if openUntil > 0 then
    local probe = tonumber(redis.call('HGET', KEYS[2], 'probe_until') or '0')
    if probe > now then
      redis.call('LREM', KEYS[3], 0, ARGV[6])
      redis.call('RPUSH', KEYS[3], ARGV[6])
      redis.call('PEXPIRE', KEYS[3], ARGV[7])
      return {0, probe}
    end
    redis.call('HSET', KEYS[2], 'probe_until', ARGV[2])
    probing = true
  end
  if redis.call('ZSCORE', KEYS[1], ARGV[4]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
    redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
    redis.call('PEXPIRE', KEYS[1], ARGV[5])
    redis.call('LREM', KEYS[3], 0, ARGV[6])
    return {1, 0}
  end
  if probing then redis.call('HDEL', KEYS[2], 'probe_until') end
  redis.call('LREM', KEYS[3], 0, ARGV[6])
  redis.call('RPUSH', KEYS[3], ARGV[6])
  redis.call('PEXPIRE', KEYS[3], ARGV[7])
  return {0, -1}`;

// Ends an attempt in one round trip. Frees exactly this attempt's slot (a stale holder cannot free a
// newer one's) and hands the turn to the first waiter; then feeds the breaker with what the attempt
// showed. KEYS: slots, waiters, breaker. ARGV[3]: 'timeout' counts towards opening, 'answered' closes,
// anything else leaves it. Opening doubles the cooldown of a breaker whose probe failed (up to 32x);
// closing wakes up to `cap` waiters. Returns the job ids to wake.
const RELEASE = `
  local woken = {}
  if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
    local id = redis.call('LPOP', KEYS[2])
    if id then woken[1] = id end
  end
  local now = tonumber(ARGV[2])
  if ARGV[3] == 'answered' then
    if redis.call('HEXISTS', KEYS[3], 'open_until') == 1 then
      for _, id in ipairs(redis.call('LPOP', KEYS[2], tonumber(ARGV[6])) or {}) do woken[#woken + 1] = id end
    end
    redis.call('DEL', KEYS[3])
    return woken
  end
  if ARGV[3] ~= 'timeout' then return woken end
  local openUntil = tonumber(redis.call('HGET', KEYS[3], 'open_until') or '0')
  -- Already open: attempts that began before it opened change nothing.
  if openUntil > now then return woken end
  local fails = redis.call('HINCRBY', KEYS[3], 'fails', 1)
  if openUntil == 0 and fails < tonumber(ARGV[4]) then
    redis.call('PEXPIRE', KEYS[3], 86400000)
    return woken
  end
  local base = tonumber(ARGV[5])
  local cooldown = base
  if openUntil > 0 then cooldown = math.min(tonumber(redis.call('HGET', KEYS[3], 'cooldown') or base) * 2, base * 32) end
  redis.call('HSET', KEYS[3], 'open_until', now + cooldown, 'cooldown', cooldown, 'fails', 0)
  redis.call('HDEL', KEYS[3], 'probe_until')
  redis.call('PEXPIRE', KEYS[3], 86400000)
  return woken`;

type LimiterRedis = Redis & {
  acquireSlot(
    slots: string,
    breaker: string,
    waiters: string,
    now: number,
    expiresAt: number,
    cap: number,
    holder: string,
    ttl: number,
    jobId: string,
    waitersTtl: number,
  ): Promise<[number, number]>;
  releaseSlot(
    slots: string,
    waiters: string,
    breaker: string,
    holder: string,
    now: number,
    signal: DestinationSignal,
    threshold: number,
    cooldownMs: number,
    cap: number,
  ): Promise<string[]>;
};

export type Admission = { admitted: true } | { admitted: false; until: number | null };

/** What an attempt showed of its destination: timed out, answered (any HTTP status), or neither. */
export type DestinationSignal = 'timeout' | 'answered' | 'other';

const WAITERS_TTL_MS = 3_600_000;
const UNCAPPED = 1_000_000_000;

/**
 * Per-destination (host:port) admission across all workers: an in-flight cap, so one slow or dead
 * receiver cannot take every slot, and a circuit breaker, so a destination that keeps timing out is
 * paused, then probed by one attempt, instead of holding slots. Jobs turned away wait in a list and are
 * woken by the release that frees their turn.
 */
@Injectable()
export class DestinationLimiter {
  private readonly redis: LimiterRedis;
  private readonly slotTtlMs: number;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    redis: RedisClients,
  ) {
    this.redis = redis.get('destination-limiter') as LimiterRedis;
    this.redis.defineCommand('acquireSlot', { numberOfKeys: 3, lua: ACQUIRE });
    this.redis.defineCommand('releaseSlot', { numberOfKeys: 3, lua: RELEASE });
    this.slotTtlMs = config.deliveryTimeoutMs * 2 + 5_000;
  }

  private get cap(): number {
    return this.config.maxInFlightPerDestination || UNCAPPED;
  }

  private keys(destination: string) {
    const base = `${this.config.queuePrefix}:dest:${destination}`;
    return { slots: `${base}:inflight`, breaker: `${base}:breaker`, waiters: `${base}:waiters` };
  }

  /** `holder` names this attempt (delivery id and job lock token); `jobId` is what a release wakes. */
  async acquire(destination: string, holder: string, jobId: string): Promise<Admission> {
    const { slots, breaker, waiters } = this.keys(destination);
    const now = Date.now();
    const ttl = this.slotTtlMs;
    const [admitted, until] = await this.redis.acquireSlot(
      slots,
      breaker,
      waiters,
      now,
      now + ttl,
      this.cap,
      holder,
      ttl,
      jobId,
      WAITERS_TTL_MS,
    );
    return admitted === 1 ? { admitted: true } : { admitted: false, until: until > 0 ? until : null };
  }

  /**
   * Frees the slot and feeds the circuit breaker with what the attempt showed (`other` leaves it as it
   * is), in one round trip; returns the job ids to wake (promote).
   */
  async release(destination: string, holder: string, signal: DestinationSignal = 'other'): Promise<string[]> {
    const { slots, waiters, breaker } = this.keys(destination);
    const { threshold, cooldownMs } = this.config.breaker;
    const fed = threshold === 0 ? 'other' : signal;
    return this.redis
      .releaseSlot(slots, waiters, breaker, holder, Date.now(), fed, threshold, cooldownMs, Math.min(this.cap, 1000))
      .catch(() => []);
  }

  /** True when a slot is free now (a job that just went to wait checks it, in case its wake was missed). */
  async hasRoom(destination: string): Promise<boolean> {
    const { slots } = this.keys(destination);
    const now = Date.now();
    const results = await this.redis
      .multi()
      .zremrangebyscore(slots, '-inf', now)
      .zcard(slots)
      .exec()
      .catch(() => null);
    const count = results?.[1]?.[1];
    return typeof count === 'number' && count < this.cap;
  }
}
