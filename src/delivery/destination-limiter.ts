import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Batcher } from '../core/batcher.js';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { RedisClients } from '../core/redis/redis.module.js';

// Both scripts serve a batch: the attempts that start (or end) while the previous call is out go to Redis
// in one call, each with its own three keys (slots, breaker, waiters), in the order they came. Every key
// of a call must be in one Redis Cluster slot: they are, under a hash-tag QUEUE_PREFIX (SCALING.md).

// Per attempt: slots (sorted set of `deliveryId:lockToken` scored by expiry, so a killed worker's slots
// free themselves), breaker (hash), waiters (list of job ids). ARGV: now, expiresAt, cap, ttl, waitersTtl,
// then holder and job id per attempt. Returns per attempt 0 when admitted, else until: > 0 is when the
// destination may be tried again (breaker open), -1 means "woken by a release".
const ACQUIRE = `
  local now = tonumber(ARGV[1])
  local cap = tonumber(ARGV[3])
  local function wait(waiters, jobId)
    redis.call('LREM', waiters, 0, jobId)
    redis.call('RPUSH', waiters, jobId)
    redis.call('PEXPIRE', waiters, ARGV[5])
  end
  local function acquire(slots, breaker, waiters, holder, jobId)
    redis.call('ZREMRANGEBYSCORE', slots, '-inf', now)
    local openUntil = tonumber(redis.call('HGET', breaker, 'open_until') or '0')
    if openUntil > now then return openUntil end
    local probing = false
    if openUntil > 0 then
      local probe = tonumber(redis.call('HGET', breaker, 'probe_until') or '0')
      if probe > now then
        wait(waiters, jobId)
        return probe
      end
      redis.call('HSET', breaker, 'probe_until', ARGV[2])
      probing = true
    end
    if redis.call('ZSCORE', slots, holder) or redis.call('ZCARD', slots) < cap then
      redis.call('ZADD', slots, ARGV[2], holder)
      redis.call('PEXPIRE', slots, ARGV[4])
      redis.call('LREM', waiters, 0, jobId)
      return 0
    end
    if probing then redis.call('HDEL', breaker, 'probe_until') end
    wait(waiters, jobId)
    return -1
  end
  local out = {}
  for i = 0, #KEYS / 3 - 1 do
    out[i + 1] = acquire(KEYS[3 * i + 1], KEYS[3 * i + 2], KEYS[3 * i + 3], ARGV[6 + 2 * i], ARGV[7 + 2 * i])
  end
  return out`;

// Ends attempts. Frees exactly each attempt's slot (a stale holder cannot free a newer one's) and hands
// the turn to the first waiter; then feeds the breaker with what the attempt showed. Per attempt: slots,
// breaker, waiters; ARGV: now, threshold, cooldown, cap, then holder and signal per attempt: 'timeout'
// counts towards opening, 'answered' closes, anything else leaves it. Opening doubles the cooldown of a
// breaker whose probe failed (up to 32x); closing wakes up to `cap` waiters. Returns per attempt the job
// ids to wake.
const RELEASE = `
  local now = tonumber(ARGV[1])
  local threshold = tonumber(ARGV[2])
  local base = tonumber(ARGV[3])
  local function release(slots, breaker, waiters, holder, signal)
    local woken = {}
    if redis.call('ZREM', slots, holder) == 1 then
      local id = redis.call('LPOP', waiters)
      if id then woken[1] = id end
    end
    if signal == 'answered' then
      if redis.call('HEXISTS', breaker, 'open_until') == 1 then
        for _, id in ipairs(redis.call('LPOP', waiters, tonumber(ARGV[4])) or {}) do woken[#woken + 1] = id end
      end
      redis.call('DEL', breaker)
      return woken
    end
    if signal ~= 'timeout' then return woken end
    local openUntil = tonumber(redis.call('HGET', breaker, 'open_until') or '0')
    -- Already open: attempts that began before it opened change nothing.
    if openUntil > now then return woken end
    local fails = redis.call('HINCRBY', breaker, 'fails', 1)
    if openUntil == 0 and fails < threshold then
      redis.call('PEXPIRE', breaker, 86400000)
      return woken
    end
    local cooldown = base
    if openUntil > 0 then cooldown = math.min(tonumber(redis.call('HGET', breaker, 'cooldown') or base) * 2, base * 32) end
    redis.call('HSET', breaker, 'open_until', now + cooldown, 'cooldown', cooldown, 'fails', 0)
    redis.call('HDEL', breaker, 'probe_until')
    redis.call('PEXPIRE', breaker, 86400000)
    return woken
  end
  local out = {}
  for i = 0, #KEYS / 3 - 1 do
    out[i + 1] = release(KEYS[3 * i + 1], KEYS[3 * i + 2], KEYS[3 * i + 3], ARGV[5 + 2 * i], ARGV[6 + 2 * i])
  end
  return out`;

type LimiterRedis = Redis & {
  /** numkeys, then the keys and the arguments as ACQUIRE reads them. */
  acquireSlots(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<number[]>;
  /** numkeys, then the keys and the arguments as RELEASE reads them. */
  releaseSlots(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<string[][]>;
};

interface Acquiring {
  destination: string;
  holder: string;
  jobId: string;
}

interface Releasing {
  destination: string;
  holder: string;
  signal: DestinationSignal;
}

export type Admission = { admitted: true } | { admitted: false; until: number | null };

/** What an attempt showed of its destination: timed out, answered (any HTTP status), or neither. */
export type DestinationSignal = 'timeout' | 'answered' | 'other';

const WAITERS_TTL_MS = 3_600_000;
const UNCAPPED = 1_000_000_000;
const MAX_BATCH = 500;

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
  // One call out at a time each: what comes meanwhile goes in the next (one script run, not one per attempt).
  private readonly acquires = new Batcher<Acquiring, Admission>((batch) => this.acquireBatch(batch), 1, MAX_BATCH);
  private readonly releases = new Batcher<Releasing, string[]>((batch) => this.releaseBatch(batch), 1, MAX_BATCH);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    redis: RedisClients,
  ) {
    this.redis = redis.get('destination-limiter') as LimiterRedis;
    this.redis.defineCommand('acquireSlots', { lua: ACQUIRE });
    this.redis.defineCommand('releaseSlots', { lua: RELEASE });
    this.slotTtlMs = config.deliveryTimeoutMs * 2 + 5_000;
  }

  private get cap(): number {
    return this.config.maxInFlightPerDestination || UNCAPPED;
  }

  private keys(destination: string): string[] {
    const base = `${this.config.queuePrefix}:dest:${destination}`;
    return [`${base}:inflight`, `${base}:breaker`, `${base}:waiters`];
  }

  /** `holder` names this attempt (delivery id and job lock token); `jobId` is what a release wakes. */
  acquire(destination: string, holder: string, jobId: string): Promise<Admission> {
    return this.acquires.add({ destination, holder, jobId });
  }

  /**
   * Frees the slot and feeds the circuit breaker with what the attempt showed (`other` leaves it as it
   * is), in one round trip; returns the job ids to wake (promote).
   */
  release(destination: string, holder: string, signal: DestinationSignal = 'other'): Promise<string[]> {
    return this.releases.add({ destination, holder, signal }).catch(() => []);
  }

  private async acquireBatch(batch: Acquiring[]): Promise<Admission[]> {
    const now = Date.now();
    const ttl = this.slotTtlMs;
    const results = await this.redis.acquireSlots(
      batch.length * 3,
      ...batch.flatMap(({ destination }) => this.keys(destination)),
      now,
      now + ttl,
      this.cap,
      ttl,
      WAITERS_TTL_MS,
      ...batch.flatMap(({ holder, jobId }) => [holder, jobId]),
    );
    return results.map((until) =>
      until === 0 ? { admitted: true } : { admitted: false, until: until > 0 ? until : null },
    );
  }

  private releaseBatch(batch: Releasing[]): Promise<string[][]> {
    const { threshold, cooldownMs } = this.config.breaker;
    return this.redis.releaseSlots(
      batch.length * 3,
      ...batch.flatMap(({ destination }) => this.keys(destination)),
      Date.now(),
      threshold,
      cooldownMs,
      Math.min(this.cap, 1000),
      // A breaker switched off (threshold 0) is fed nothing: every attempt counts as `other`.
      ...batch.flatMap(({ holder, signal }) => [holder, threshold === 0 ? 'other' : signal]),
    );
  }

  /** True when a slot is free now (a job that just went to wait checks it, in case its wake was missed). */
  async hasRoom(destination: string): Promise<boolean> {
    const [slots] = this.keys(destination);
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
