import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Batcher } from '../../core/batcher.js';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { RedisClients } from '../../core/redis/redis.module.js';
import { hostKeys } from '../host-state.js';
import { decideLimit, type DropReason } from './host-limit.js';

const SCAN_WAITERS = 200;

// The scripts serve a batch: the attempts that start (or end) while the previous call is out go to Redis
// in one call, grouped by host: each host's five keys (hostKeys: slots, breaker, waiters, limit,
// webhooks) once, then its attempts in the order they came. Every key of a call must be in one Redis
// Cluster slot: they are, under a hash-tag QUEUE_PREFIX (SCALING.md).

// How the batch scripts read that layout (DestinationLimiter.grouped writes it): from ARGV[at] on, per host
// its number of attempts, then `width` arguments per attempt. `start(...keys)` runs once per host and
// returns the function each of its attempts is passed to (and optionally one to run after them); returns
// every attempt's answer, host by host.
const EACH_DESTINATION = `
  local function eachDestination(at, width, start)
    local out = {}
    for g = 0, #KEYS / 5 - 1 do
      local k = 5 * g
      local attempt, finish = start(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5])
      for _ = 1, tonumber(ARGV[at]) do
        out[#out + 1] = attempt(unpack(ARGV, at + 1, at + width))
        at = at + width
      end
      at = at + 1
      if finish then finish() end
    end
    return out
  end`;

// A slot is `webhookId|holder`, a waiter `webhookId|jobId`: the webhook's count (hash webhooks) follows
// its slots, even those a killed worker leaves to expire. popEligible hands the turn to the first waiters
// whose webhook is under its cap, looking at the first SCAN_WAITERS of them.
const WEBHOOK_SLOTS = `
  local function leave(webhooks, member)
    local webhookId = string.match(member, '^(.-)|')
    if webhookId and redis.call('HINCRBY', webhooks, webhookId, -1) <= 0 then redis.call('HDEL', webhooks, webhookId) end
  end
  local function popEligible(waiters, webhooks, cap, n)
    local out = {}
    if n <= 0 then return out end
    local counted = {}
    for _, entry in ipairs(redis.call('LRANGE', waiters, 0, ${SCAN_WAITERS - 1})) do
      local webhookId, jobId = string.match(entry, '^(.-)|(.*)$')
      if webhookId then
        local held = counted[webhookId] or tonumber(redis.call('HGET', webhooks, webhookId) or '0')
        if cap == 0 or held < cap then
          redis.call('LREM', waiters, 1, entry)
          out[#out + 1] = jobId
          counted[webhookId] = held + 1
          if #out >= n then break end
        end
      end
    end
    return out
  end`;

// Per host: slots (sorted set of `webhookId|deliveryId:lockToken` scored by expiry, so a killed worker's
// slots free themselves), breaker (hash), waiters (list), limit (hash: the adaptive limit and its
// window), webhooks (hash of slots per webhook). ARGV: now, expiresAt, webhook cap, ttl, waitersTtl,
// initial limit, limit ttl, then per host its number of attempts and each attempt's holder, job id and
// webhook id. Returns per attempt 0 when admitted, else until: > 0 is when the host may be tried again
// (breaker open), -1 means "woken by a release". What no attempt of the call changes is read once per
// host: the expired slots, the count, the limit, the breaker's open_until.
const ACQUIRE = `${EACH_DESTINATION}${WEBHOOK_SLOTS}
  local now = tonumber(ARGV[1])
  local cap = tonumber(ARGV[3])
  return eachDestination(8, 3, function(slots, breaker, waiters, state, webhooks)
    local expired = redis.call('ZRANGEBYSCORE', slots, '-inf', now)
    if #expired > 0 then
      for _, member in ipairs(expired) do leave(webhooks, member) end
      redis.call('ZREMRANGEBYSCORE', slots, '-inf', now)
    end
    local count = redis.call('ZCARD', slots)
    local limit = tonumber(redis.call('HGET', state, 'limit') or ARGV[6])
    local openUntil = tonumber(redis.call('HGET', breaker, 'open_until') or '0')
    local waiting = redis.call('EXISTS', waiters) == 1
    local taken = false
    local function wait(entry)
      redis.call('LREM', waiters, 0, entry)
      redis.call('RPUSH', waiters, entry)
      redis.call('PEXPIRE', waiters, ARGV[5])
      waiting = true
    end
    local function acquire(holder, jobId, webhookId)
      local member = webhookId .. '|' .. holder
      local entry = webhookId .. '|' .. jobId
      if openUntil > now then return openUntil end
      local probing = false
      if openUntil > 0 then
        local probe = tonumber(redis.call('HGET', breaker, 'probe_until') or '0')
        if probe > now then
          wait(entry)
          return probe
        end
        redis.call('HSET', breaker, 'probe_until', ARGV[2])
        probing = true
      end
      local held = redis.call('ZSCORE', slots, member)
      local mine = tonumber(redis.call('HGET', webhooks, webhookId) or '0')
      if held or (count < limit and (cap == 0 or mine < cap)) then
        if redis.call('ZADD', slots, ARGV[2], member) == 1 then
          count = count + 1
          redis.call('HINCRBY', webhooks, webhookId, 1)
        end
        taken = true
        if waiting then redis.call('LREM', waiters, 0, entry) end
        return 0
      end
      if probing then redis.call('HDEL', breaker, 'probe_until') end
      wait(entry)
      return -1
    end
    return acquire, function()
      if not taken then return end
      redis.call('PEXPIRE', slots, ARGV[4])
      redis.call('PEXPIRE', webhooks, ARGV[4])
      -- The window's peak in flight: whether the limit is in use, so whether it may grow.
      if count > tonumber(redis.call('HGET', state, 'wpeak') or '0') then redis.call('HSET', state, 'wpeak', count) end
      redis.call('PEXPIRE', state, ARGV[7])
    end
  end)`;

// Ends attempts. Frees exactly each attempt's slot (a stale holder cannot free a newer one's) and hands
// the turn to the first eligible waiter; adds what the attempt showed to the host's window; then feeds the
// breaker. ARGV: now, threshold, cooldown, webhook cap, initial limit, min limit, limit ttl, min window
// (ms), then per host its number of attempts and each attempt's holder, webhook id, signal, latency (ms)
// and admission time. Signals: 'ok' (2xx) adds a latency sample; '429', '503', 'refused', 'reset',
// 'timeout' close the window at once unless the attempt was admitted before the last cut (it says
// nothing of the cut limit); a window also closes once it is a recent minimum latency old (at least the
// min window). 'timeout' counts towards opening the breaker, an answer ('ok', 'answered', '429', '503')
// closes it, anything else leaves it. Opening sets the limit to its minimum (the two ends of one
// mechanism) and doubles the cooldown of a breaker whose probe failed (up to 32x); closing wakes up to
// the limit's waiters. Returns per attempt the job ids to wake and the closed window, if any, for
// decideLimit: epoch, limit, peak, samples, latency sum, latency min, drop, recent minimum, ceiling.
const RELEASE = `${EACH_DESTINATION}${WEBHOOK_SLOTS}
  local now = tonumber(ARGV[1])
  local threshold = tonumber(ARGV[2])
  local base = tonumber(ARGV[3])
  local cap = tonumber(ARGV[4])
  local DROPS = { ['429'] = true, ['503'] = true, refused = true, reset = true, timeout = true }
  local ANSWERS = { ok = true, answered = true, ['429'] = true, ['503'] = true }
  return eachDestination(9, 5, function(slots, breaker, waiters, state, webhooks)
    -- No breaker: an answer has nothing to close (the usual case, one call per host, not per attempt).
    local closed = redis.call('EXISTS', breaker) == 0
    local function restart()
      local epoch = redis.call('HINCRBY', state, 'epoch', 1)
      redis.call('HSET', state, 'wstart', now, 'wcount', 0, 'wsum', 0, 'wpeak', redis.call('ZCARD', slots))
      redis.call('HDEL', state, 'wmin')
      return epoch
    end
    local function closeWindow(drop)
      local w = redis.call('HMGET', state, 'limit', 'wpeak', 'wcount', 'wsum', 'wmin', 'minrtt', 'ceiling')
      local epoch = restart()
      if drop ~= '' then redis.call('HSET', state, 'cut_at', now) end
      return { tostring(epoch), w[1] or ARGV[5], w[2] or '0', w[3] or '0', w[4] or '0', w[5] or '0', drop, w[6] or '', w[7] or '' }
    end
    local function sample(signal, latency, admittedAt)
      if DROPS[signal] then
        if tonumber(admittedAt) < tonumber(redis.call('HGET', state, 'cut_at') or '0') then return {} end
        return closeWindow(signal)
      end
      if signal ~= 'ok' then return {} end
      local w = redis.call('HMGET', state, 'wstart', 'wmin', 'minrtt')
      local ms = tonumber(latency)
      redis.call('HINCRBY', state, 'wcount', 1)
      redis.call('HINCRBY', state, 'wsum', ms)
      if not w[2] or ms < tonumber(w[2]) then redis.call('HSET', state, 'wmin', ms) end
      if not w[1] then
        redis.call('HSET', state, 'wstart', now)
        return {}
      end
      if now - tonumber(w[1]) < math.max(tonumber(w[3] or '0'), tonumber(ARGV[8])) then return {} end
      return closeWindow('')
    end
    local function release(holder, webhookId, signal, latency, admittedAt)
      local woken = {}
      local window = {}
      local member = webhookId .. '|' .. holder
      if redis.call('ZREM', slots, member) == 1 then
        leave(webhooks, member)
        woken = popEligible(waiters, webhooks, cap, 1)
        window = sample(signal, latency, admittedAt)
        redis.call('PEXPIRE', state, ARGV[7])
      end
      if ANSWERS[signal] then
        if closed then return { woken, window } end
        if redis.call('HEXISTS', breaker, 'open_until') == 1 then
          local limit = tonumber(redis.call('HGET', state, 'limit') or ARGV[5])
          for _, id in ipairs(popEligible(waiters, webhooks, cap, limit)) do woken[#woken + 1] = id end
        end
        redis.call('DEL', breaker)
        closed = true
        return { woken, window }
      end
      -- A breaker switched off (threshold 0) is never opened; the limit still takes the timeout.
      if signal ~= 'timeout' or threshold == 0 then return { woken, window } end
      closed = false
      local openUntil = tonumber(redis.call('HGET', breaker, 'open_until') or '0')
      -- Already open: attempts that began before it opened change nothing.
      if openUntil > now then return { woken, window } end
      local fails = redis.call('HINCRBY', breaker, 'fails', 1)
      if openUntil == 0 and fails < threshold then
        redis.call('PEXPIRE', breaker, 86400000)
        return { woken, window }
      end
      local cooldown = base
      if openUntil > 0 then cooldown = math.min(tonumber(redis.call('HGET', breaker, 'cooldown') or base) * 2, base * 32) end
      redis.call('HSET', breaker, 'open_until', now + cooldown, 'cooldown', cooldown, 'fails', 0)
      redis.call('HDEL', breaker, 'probe_until')
      redis.call('PEXPIRE', breaker, 86400000)
      -- Paused: it resumes from the least limit. A window closed above is superseded (its epoch is past).
      restart()
      redis.call('HSET', state, 'limit', ARGV[6], 'reason', 'paused', 'changed_at', now, 'cut_at', now)
      redis.call('PEXPIRE', state, ARGV[7])
      return { woken, {} }
    end
    return release
  end)`;

// Sets the limit decideLimit chose for a closed window, unless a later window closed meanwhile (or the
// breaker set it). KEYS: slots, waiters, limit, webhooks. ARGV: now, epoch, limit, recent minimum,
// reason ('' = unchanged), webhook cap, limit ttl, ceiling ('' = none). Returns the job ids to wake for the room it made.
const DECIDE = `${WEBHOOK_SLOTS}
  if redis.call('HGET', KEYS[3], 'epoch') ~= ARGV[2] then return {} end
  redis.call('HSET', KEYS[3], 'limit', ARGV[3])
  if ARGV[4] ~= '' then redis.call('HSET', KEYS[3], 'minrtt', ARGV[4]) end
  if ARGV[8] ~= '' then redis.call('HSET', KEYS[3], 'ceiling', ARGV[8]) else redis.call('HDEL', KEYS[3], 'ceiling') end
  if ARGV[5] ~= '' then redis.call('HSET', KEYS[3], 'reason', ARGV[5], 'changed_at', ARGV[1]) end
  redis.call('PEXPIRE', KEYS[3], ARGV[7])
  return popEligible(KEYS[2], KEYS[4], tonumber(ARGV[6]), tonumber(ARGV[3]) - redis.call('ZCARD', KEYS[1]))`;

type LimiterRedis = Redis & {
  /** numkeys, then the keys and the arguments as ACQUIRE reads them. */
  acquireSlots(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<number[]>;
  /** numkeys, then the keys and the arguments as RELEASE reads them. */
  releaseSlots(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<[string[], string[]][]>;
  /** numkeys, then the keys and the arguments as DECIDE reads them. */
  decideLimit(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<string[]>;
};

interface Acquiring {
  destination: string;
  holder: string;
  jobId: string;
  webhookId: string;
}

interface Releasing extends Attempted {
  destination: string;
  holder: string;
  webhookId: string;
}

export type Admission = { admitted: true } | { admitted: false; until: number | null };

/**
 * What an attempt showed of its host: a 2xx (`ok`, its latency a sample), another answer, an overload
 * signal (DropReason), or nothing (`other`: not sent, or failed in a way that says nothing of the host).
 */
export type HostSignal = 'ok' | 'answered' | DropReason | 'other';

/** What a release reports: the signal, the attempt's latency, and when it was admitted (ms). */
export interface Attempted {
  signal: HostSignal;
  latencyMs: number;
  admittedAt: number;
}

const WAITERS_TTL_MS = 3_600_000;
// An idle host's limit is forgotten after this long: it starts again from DELIVERY_HOST_INITIAL_LIMIT.
const LIMIT_TTL_MS = 3_600_000;
// A window is at least this long, so a 1 ms receiver's limit does not move on every batch.
const MIN_WINDOW_MS = 100;
const MAX_BATCH = 500;

/**
 * Admission to a host (host:port) across all workers: at most DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK
 * attempts in flight per webhook, and per host an adaptive limit (decideLimit in host-limit.ts states
 * the rule) kept in Redis with the host's slots, so every worker admits against the same limit; and a
 * circuit breaker, the limit's other end, so a host that keeps timing out is paused at the least limit,
 * then probed by one attempt, instead of holding slots. Jobs turned away wait in a list and are woken by
 * the release (or the raised limit) that makes their turn.
 */
@Injectable()
export class DestinationLimiter {
  private readonly logger = new Logger('DestinationLimiter');
  private readonly redis: LimiterRedis;
  private readonly slotTtlMs: number;
  // One call out at a time each: what comes meanwhile goes in the next (one script run, not one per attempt).
  private readonly acquires = new Batcher<Acquiring, Admission>((batch) => this.acquireBatch(batch), 1, MAX_BATCH);
  private readonly releases = new Batcher<Releasing, [string[], string[]]>(
    (batch) => this.releaseBatch(batch),
    1,
    MAX_BATCH,
  );

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    redis: RedisClients,
  ) {
    this.redis = redis.get('destination-limiter') as LimiterRedis;
    this.redis.defineCommand('acquireSlots', { lua: ACQUIRE });
    this.redis.defineCommand('releaseSlots', { lua: RELEASE });
    this.redis.defineCommand('decideLimit', { lua: DECIDE });
    this.slotTtlMs = config.deliveryTimeoutMs * 2 + 5_000;
  }

  private keys(destination: string): string[] {
    const { slots, breaker, waiters, limit, webhooks } = hostKeys(this.config.queuePrefix, destination);
    return [slots, breaker, waiters, limit, webhooks];
  }

  /**
   * `holder` names this attempt (delivery id and job lock token); `jobId` is what a release wakes;
   * `webhookId` whose cap it counts against.
   */
  acquire(destination: string, holder: string, jobId: string, webhookId: string): Promise<Admission> {
    return this.acquires.add({ destination, holder, jobId, webhookId });
  }

  /**
   * Frees the slot, adds what the attempt showed to the host's limit and breaker (`other` changes
   * neither), and sets the host's next limit when the attempt closed a window; returns the job ids to
   * wake (promote).
   */
  async release(
    destination: string,
    holder: string,
    webhookId: string,
    attempted: Attempted = { signal: 'other', latencyMs: 0, admittedAt: 0 },
  ): Promise<string[]> {
    try {
      const [woken, window] = await this.releases.add({ destination, holder, webhookId, ...attempted });
      if (window.length === 0) return woken;
      return woken.concat(await this.decide(destination, window));
    } catch {
      return [];
    }
  }

  /** Computes and sets the limit a closed window calls for; returns the waiters its room wakes. */
  private async decide(destination: string, closed: string[]): Promise<string[]> {
    const [epoch, limit, peak, samples, latencySum, latencyMin, drop, minRtt, ceiling] = closed;
    const decision = decideLimit(
      {
        limit: Number(limit),
        peakInFlight: Number(peak),
        samples: Number(samples),
        latencySumMs: Number(latencySum),
        latencyMinMs: Number(latencyMin),
        drop: drop === '' ? null : (drop as DropReason),
        minRttMs: minRtt === '' ? null : Number(minRtt),
        ceiling: ceiling === '' ? null : Number(ceiling),
      },
      this.config.hostLimit,
    );
    if (decision.reason && decision.reason !== 'growth') {
      this.logger.log({ msg: 'host limit cut', host: destination, limit: decision.limit, reason: decision.reason });
    }
    const [slots, , waiters, state, webhooks] = this.keys(destination);
    return this.redis.decideLimit(
      4,
      slots,
      waiters,
      state,
      webhooks,
      Date.now(),
      epoch,
      decision.limit,
      decision.minRttMs === null ? '' : decision.minRttMs.toFixed(2),
      decision.reason ?? '',
      this.config.maxInFlightPerWebhook,
      LIMIT_TTL_MS,
      decision.ceiling ?? '',
    );
  }

  private async acquireBatch(batch: Acquiring[]): Promise<Admission[]> {
    const now = Date.now();
    const ttl = this.slotTtlMs;
    const { keys, args, inBatchOrder } = this.grouped(batch, ({ holder, jobId, webhookId }) => [
      holder,
      jobId,
      webhookId,
    ]);
    const results = await this.redis.acquireSlots(
      keys.length,
      ...keys,
      now,
      now + ttl,
      this.config.maxInFlightPerWebhook,
      ttl,
      WAITERS_TTL_MS,
      this.config.hostLimit.initial,
      LIMIT_TTL_MS,
      ...args,
    );
    return inBatchOrder(results).map((until) =>
      until === 0 ? { admitted: true } : { admitted: false, until: until > 0 ? until : null },
    );
  }

  private async releaseBatch(batch: Releasing[]): Promise<[string[], string[]][]> {
    const { threshold, cooldownMs } = this.config.breaker;
    const { keys, args, inBatchOrder } = this.grouped(batch, ({ holder, webhookId, signal, latencyMs, admittedAt }) => [
      holder,
      webhookId,
      signal,
      Math.max(0, Math.round(latencyMs)),
      admittedAt,
    ]);
    const results = await this.redis.releaseSlots(
      keys.length,
      ...keys,
      Date.now(),
      threshold,
      cooldownMs,
      this.config.maxInFlightPerWebhook,
      this.config.hostLimit.initial,
      this.config.hostLimit.min,
      LIMIT_TTL_MS,
      MIN_WINDOW_MS,
      ...args,
    );
    return inBatchOrder(results);
  }

  /**
   * A batch as the scripts take it: each host's keys once, then its number of attempts and each one's
   * arguments (EACH_DESTINATION reads it); `inBatchOrder` puts the script's answers, which come host by
   * host, back in the batch's order.
   */
  private grouped<T extends { destination: string }>(
    batch: T[],
    argsOf: (item: T) => (string | number)[],
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

  /**
   * True when the host and the webhook have room now (a job that just went to wait checks it, in case
   * its wake was missed).
   */
  async hasRoom(destination: string, webhookId: string): Promise<boolean> {
    const [slots, , , state, webhooks] = this.keys(destination);
    const results = await this.redis
      .multi()
      .zcount(slots, `(${Date.now()}`, '+inf')
      .hget(state, 'limit')
      .hget(webhooks, webhookId)
      .exec()
      .catch(() => null);
    if (!results || results.some(([error]) => error)) return false;
    const [count, limit, mine] = results.map(([, value]) => value);
    const cap = this.config.maxInFlightPerWebhook;
    const hostLimit = limit === null ? this.config.hostLimit.initial : Number(limit);
    return Number(count) < hostLimit && (cap === 0 || Number(mine ?? 0) < cap);
  }
}
