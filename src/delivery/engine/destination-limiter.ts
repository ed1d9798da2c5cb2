import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Batcher } from '../../core/batcher.js';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { RedisClients } from '../../core/redis/redis.module.js';

// Both scripts serve a batch: the attempts that start (or end) while the previous call is out go to Redis
// in one call, grouped by destination: each destination's three keys (slots, breaker, waiters) once, then
// its attempts in the order they came. Every key of a call must be in one Redis Cluster slot: they are,
// under a hash-tag QUEUE_PREFIX (SCALING.md).

// How both scripts read that layout (DestinationLimiter.grouped writes it): from ARGV[at] on, per destination
// its number of attempts, then two arguments per attempt. `start(slots, breaker, waiters)` runs once per
// destination and returns the function each of its attempts is passed to (and optionally one to run after
// them); returns every attempt's answer, destination by destination.
const EACH_DESTINATION = `
  local function eachDestination(at, start)
    local out = {}
    for g = 0, #KEYS / 3 - 1 do
      local attempt, finish = start(KEYS[3 * g + 1], KEYS[3 * g + 2], KEYS[3 * g + 3])
      for _ = 1, tonumber(ARGV[at]) do
        out[#out + 1] = attempt(ARGV[at + 1], ARGV[at + 2])
        at = at + 2
      end
      at = at + 1
      if finish then finish() end
    end
    return out
  end`;

// Per destination: slots (sorted set of `deliveryId:lockToken` scored by expiry, so a killed worker's
// slots free themselves), breaker (hash), waiters (list of job ids). ARGV: now, expiresAt, cap, ttl,
// waitersTtl, then per destination its number of attempts and each attempt's holder and job id. Returns
// per attempt 0 when admitted, else until: > 0 is when the destination may be tried again (breaker open),
// -1 means "woken by a release". What no attempt of the call changes is read once per destination: the
// expired slots, the count, the breaker's open_until (only a release opens or closes it).
const ACQUIRE = `${EACH_DESTINATION}
  local now = tonumber(ARGV[1])
  local cap = tonumber(ARGV[3])
  return eachDestination(6, function(slots, breaker, waiters)
    redis.call('ZREMRANGEBYSCORE', slots, '-inf', now)
    local count = redis.call('ZCARD', slots)
    local openUntil = tonumber(redis.call('HGET', breaker, 'open_until') or '0')
    local waiting = redis.call('EXISTS', waiters) == 1
    local taken = false
    local function wait(jobId)
      redis.call('LREM', waiters, 0, jobId)
      redis.call('RPUSH', waiters, jobId)
      redis.call('PEXPIRE', waiters, ARGV[5])
      waiting = true
    end
    local function acquire(holder, jobId)
      if openUntil > now then return openUntil end
      local probing = false
      if openUntil > 0 then
        local probe = tonumber(redis.call('HGET', breaker, 'probe_until') or '0')
        if probe > now then
          wait(jobId)
          return probe
        end
        redis.call('HSET', breaker, 'probe_until', ARGV[2])
        probing = true
      end
      if count < cap or redis.call('ZSCORE', slots, holder) then
        count = count + redis.call('ZADD', slots, ARGV[2], holder)
        taken = true
        if waiting then redis.call('LREM', waiters, 0, jobId) end
        return 0
      end
      if probing then redis.call('HDEL', breaker, 'probe_until') end
      wait(jobId)
      return -1
    end
    return acquire, function()
      if taken then redis.call('PEXPIRE', slots, ARGV[4]) end
    end
  end)`;

// Ends attempts. Frees exactly each attempt's slot (a stale holder cannot free a newer one's) and hands
// the turn to the first waiter; then feeds the breaker with what the attempt showed. Per destination:
// slots, breaker, waiters; ARGV: now, threshold, cooldown, cap, then per destination its number of
// attempts and each attempt's holder and signal: 'timeout' counts towards opening, 'answered' closes,
// anything else leaves it. Opening doubles the cooldown of a breaker whose probe failed (up to 32x);
// closing wakes up to `cap` waiters. Returns per attempt the job ids to wake.
const RELEASE = `${EACH_DESTINATION}
  local now = tonumber(ARGV[1])
  local threshold = tonumber(ARGV[2])
  local base = tonumber(ARGV[3])
  return eachDestination(5, function(slots, breaker, waiters)
    -- No breaker: an answer has nothing to close (the usual case, one call per destination, not per attempt).
    local closed = redis.call('EXISTS', breaker) == 0
    local function release(holder, signal)
      local woken = {}
      if redis.call('ZREM', slots, holder) == 1 then
        local id = redis.call('LPOP', waiters)
        if id then woken[1] = id end
      end
      if signal == 'answered' then
        if closed then return woken end
        if redis.call('HEXISTS', breaker, 'open_until') == 1 then
          for _, id in ipairs(redis.call('LPOP', waiters, tonumber(ARGV[4])) or {}) do woken[#woken + 1] = id end
        end
        redis.call('DEL', breaker)
        closed = true
        return woken
      end
      if signal ~= 'timeout' then return woken end
      closed = false
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
    return release
  end)`;

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
    const { keys, args, inBatchOrder } = this.grouped(batch, ({ holder, jobId }) => [holder, jobId]);
    const results = await this.redis.acquireSlots(
      keys.length,
      ...keys,
      now,
      now + ttl,
      this.cap,
      ttl,
      WAITERS_TTL_MS,
      ...args,
    );
    return inBatchOrder(results).map((until) =>
      until === 0 ? { admitted: true } : { admitted: false, until: until > 0 ? until : null },
    );
  }

  private async releaseBatch(batch: Releasing[]): Promise<string[][]> {
    const { threshold, cooldownMs } = this.config.breaker;
    // A breaker switched off (threshold 0) is fed nothing: every attempt counts as `other`.
    const { keys, args, inBatchOrder } = this.grouped(batch, ({ holder, signal }) => [
      holder,
      threshold === 0 ? 'other' : signal,
    ]);
    const results = await this.redis.releaseSlots(
      keys.length,
      ...keys,
      Date.now(),
      threshold,
      cooldownMs,
      Math.min(this.cap, 1000),
      ...args,
    );
    return inBatchOrder(results);
  }

  /**
   * A batch as the scripts take it: each destination's keys once, then its number of attempts and each
   * one's arguments (EACH_DESTINATION reads it); `inBatchOrder` puts the script's answers, which come
   * destination by destination, back in the batch's order.
   */
  private grouped<T extends { destination: string }>(
    batch: T[],
    argsOf: (item: T) => string[],
  ): { keys: string[]; args: (string | number)[]; inBatchOrder: <R>(answers: R[]) => R[] } {
    const byDestination = new Map<string, number[]>();
    batch.forEach(({ destination }, index) => {
      const indexes = byDestination.get(destination);
      if (indexes) indexes.push(index);
      else byDestination.set(destination, [index]);
    });
    const keys: string[] = [];
    const args: (string | number)[] = [];
    const order: number[] = [];
    for (const [destination, indexes] of byDestination) {
      keys.push(...this.keys(destination));
      args.push(indexes.length);
      for (const index of indexes) args.push(...argsOf(batch[index]));
      order.push(...indexes);
    }
    const inBatchOrder = <R>(answers: R[]): R[] => {
      const sorted = new Array<R>(batch.length);
      order.forEach((index, k) => (sorted[index] = answers[k]));
      return sorted;
    };
    return { keys, args, inBatchOrder };
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
