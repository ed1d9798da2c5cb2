import { Inject, Injectable, Logger } from '@nestjs/common';
import type { RedisClient } from '../../../core/redis/redis.module.js';
import { Batcher } from '../../../core/batcher.js';
import type { AppConfig } from '../../../core/config/config.js';
import { APP_CONFIG } from '../../../core/config/config.module.js';
import { QueueLayout } from '../../../core/redis/queue-layout.js';
import { withTimeout } from '../../../core/with-timeout.js';
import { RedisClients } from '../../../core/redis/redis.module.js';
import { hostKeysOf } from '../../host-state.js';
import { decideLimit, type DropReason } from './host-limit.js';
import { DECIDE, ENTER, LEAVE } from './host-admission.scripts.js';

type ScriptAnswer<T> = [T[], [number, string, string][]];

type AdmissionRedis = RedisClient & {
  /** numkeys, then the keys and the arguments as ENTER reads them. */
  enterHosts(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<ScriptAnswer<number>>;
  /** numkeys, then the keys and the arguments as LEAVE reads them. */
  leaveHosts(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<ScriptAnswer<string[]>>;
  /** numkeys, then the keys and the arguments as DECIDE reads them. */
  decideHost(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<ScriptAnswer<never>>;
};

/** A waiter given its turn: its slot is kept for it until it comes back. */
export interface Woken {
  destination: string;
  webhookId: string;
  jobId: string;
}

/** Who asks: `holder` names the attempt (delivery id and job lock token), `jobId` what a turn wakes. */
export interface Entering {
  destination: string;
  holder: string;
  jobId: string;
  webhookId: string;
  workspaceId: string;
  /** The webhook's in-flight cap (0: none), kept at the host for its waiters too. */
  cap: number;
}

/** 0 when admitted, else the time by which room is certain (the waiter is in line, woken before then). */
export type HostAnswer = number;

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

interface Leaving extends Attempted {
  destination: string;
  holder: string;
  webhookId: string;
}

// An idle host's state is forgotten after this long: its limit starts again from DELIVERY_HOST_INITIAL_LIMIT.
const KEY_TTL_MS = 3_600_000;
// A window is at least this long, so a 1 ms receiver's limit does not move on every batch.
const MIN_WINDOW_MS = 100;
// And holds at least this many answers (or the limit's worth, when lower): Netflix's WindowedLimit windowSize.
const MIN_SAMPLES = 10;
const MAX_BATCH = 500;
// Calls out at once per script: a batch need not wait for the previous one's round trip.
const CALLS_OUT = 4;
// A script answers in a millisecond. A call still out after this was lost (a Redis Cluster failover can
// leave a command unanswered for good): it fails, so its jobs are retried instead of holding the batch's
// turn, and their jobs' locks, forever.
const ANSWER_WITHIN_MS = 5_000;
const answered = <T>(call: Promise<T>) =>
  withTimeout(call, ANSWER_WITHIN_MS, `admission: Redis did not answer within ${ANSWER_WITHIN_MS} ms`);

/**
 * A host's admission in Redis, shared by every worker: its slots, each webhook's cap, the adaptive limit
 * (decideLimit states the rule), the breaker, and the line of waiters served in turn by workspace, then by
 * webhook (host-admission.scripts.ts). Attempts that start or end while the previous call is out go
 * together in the next, grouped by host.
 */
@Injectable()
export class HostAdmission {
  private readonly logger = new Logger('HostAdmission');
  private readonly redis: AdmissionRedis;
  /** A slot's life unless released: an attempt's longest run, with room to record it. */
  readonly slotTtlMs: number;
  private readonly layout: QueueLayout;
  /** Per queue shard: a batch's hosts are all in the shard's slot, so one script call may touch them all. */
  private readonly enters: Batcher<Entering, [HostAnswer, Woken[]]>[];
  private readonly leaves: Batcher<Leaving, [string[], Woken[]]>[];

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    redis: RedisClients,
  ) {
    this.redis = redis.get('admission') as AdmissionRedis;
    this.redis.defineCommand('enterHosts', { lua: ENTER });
    this.redis.defineCommand('leaveHosts', { lua: LEAVE });
    this.redis.defineCommand('decideHost', { lua: DECIDE });
    this.slotTtlMs = config.deliveryTimeoutMs * 2 + 5_000;
    this.layout = QueueLayout.of(config);
    const shards = Array.from({ length: this.layout.shards });
    this.enters = shards.map(() => new Batcher((batch: Entering[]) => this.enterBatch(batch), CALLS_OUT, MAX_BATCH));
    this.leaves = shards.map(() => new Batcher((batch: Leaving[]) => this.leaveBatch(batch), CALLS_OUT, MAX_BATCH));
  }

  private hostKeys(destination: string) {
    return hostKeysOf(this.layout, destination);
  }

  /** Admits the attempt, or puts it in the host's line; with the waiters this call gave a turn to. */
  enter(entering: Entering): Promise<[HostAnswer, Woken[]]> {
    return this.enters[this.layout.shardOf(entering.destination)].add(entering);
  }

  /**
   * Frees the slot (or a turn kept for a waiter that will not come: holder `job:<jobId>`), adds what the
   * attempt showed to the host's limit and breaker (`other` changes neither), and sets the host's next
   * limit when the attempt closed a window; returns the waiters given a turn.
   */
  async leave(destination: string, holder: string, webhookId: string, attempted: Attempted): Promise<Woken[]> {
    const shard = this.layout.shardOf(destination);
    const [window, woken] = await this.leaves[shard].add({ destination, holder, webhookId, ...attempted });
    if (window.length === 0) return woken;
    return woken.concat(await this.decide(destination, window));
  }

  /** Whether the job is still in the host's line (a turn may have been given while it was parking). */
  async inLine(destination: string, jobId: string): Promise<boolean> {
    return (await answered(this.redis.hexists(this.hostKeys(destination).waiting, jobId))) === 1;
  }

  /** Computes and sets the limit a closed window calls for; returns the waiters its room gives a turn to. */
  private async decide(destination: string, closed: string[]): Promise<Woken[]> {
    const [epoch, limit, peak, samples, latencySum, latencyMin, drop, minRtt, ceiling, minRttLoad, otherAnswers] =
      closed;
    const decision = decideLimit(
      {
        limit: Number(limit),
        peakInFlight: Number(peak),
        samples: Number(samples),
        otherAnswers: Number(otherAnswers),
        latencySumMs: Number(latencySum),
        latencyMinMs: Number(latencyMin),
        drop: drop === '' ? null : (drop as DropReason),
        minRttMs: minRtt === '' ? null : Number(minRtt),
        minRttLoad: minRttLoad === '' ? null : Number(minRttLoad),
        ceiling: ceiling === '' ? null : Number(ceiling),
      },
      this.config.hostLimit,
    );
    if (decision.reason && decision.reason !== 'growth') {
      this.logger.log({ msg: 'host limit cut', host: destination, limit: decision.limit, reason: decision.reason });
    }
    const keys = this.keys(destination);
    const [, woken] = await answered(
      this.redis.decideHost(
        keys.length,
        ...keys,
        ...this.common(),
        this.hostKeys(destination).base,
        epoch,
        decision.limit,
        decision.minRttMs === null ? '' : decision.minRttMs.toFixed(2),
        decision.reason ?? '',
        decision.ceiling ?? '',
        decision.minRttLoad ?? '',
      ),
    );
    return woken.map(([, webhookId, jobId]) => ({ destination, webhookId, jobId }));
  }

  private async enterBatch(batch: Entering[]): Promise<[HostAnswer, Woken[]][]> {
    const { keys, args, inBatchOrder, destinations } = this.grouped(
      batch,
      ({ holder, jobId, webhookId, workspaceId, cap }) => [holder, jobId, webhookId, workspaceId, cap],
    );
    const [answers, woken] = await answered(this.redis.enterHosts(keys.length, ...keys, ...this.common(), ...args));
    return this.withWoken(inBatchOrder(answers), woken, destinations);
  }

  private async leaveBatch(batch: Leaving[]): Promise<[string[], Woken[]][]> {
    const { threshold, cooldownMs } = this.config.breaker;
    const { keys, args, inBatchOrder, destinations } = this.grouped(
      batch,
      ({ holder, webhookId, signal, latencyMs, admittedAt }) => [
        holder,
        webhookId,
        signal,
        Math.max(0, Math.round(latencyMs)),
        admittedAt,
      ],
    );
    const [windows, woken] = await answered(
      this.redis.leaveHosts(
        keys.length,
        ...keys,
        ...this.common(),
        threshold,
        cooldownMs,
        this.config.hostLimit.min,
        MIN_WINDOW_MS,
        this.config.hostLimit.max,
        MIN_SAMPLES,
        ...args,
      ),
    );
    return this.withWoken(inBatchOrder(windows), woken, destinations);
  }

  /** The woken of a whole batch go to its first caller, which wakes them; the others get none. */
  private withWoken<T>(answers: T[], woken: [number, string, string][], destinations: string[]): [T, Woken[]][] {
    const all = woken.map(([group, webhookId, jobId]) => ({ destination: destinations[group], webhookId, jobId }));
    return answers.map((answer, i) => [answer, i === 0 ? all : []]);
  }

  private common(): (string | number)[] {
    return [Date.now(), this.config.maxInFlightPerWebhook, this.slotTtlMs, this.config.hostLimit.initial, KEY_TTL_MS];
  }

  private keys(destination: string): string[] {
    const { slots, breaker, limit, webhooks, line, waiting, owners } = this.hostKeys(destination);
    return [slots, breaker, limit, webhooks, line, waiting, owners];
  }

  /**
   * A batch as the scripts take it: each host's keys once, and in the arguments its base, its number of
   * attempts and each one's arguments; `inBatchOrder` puts the answers, which come host by host, back in
   * the batch's order; `destinations` names the hosts by group.
   */
  private grouped<T extends { destination: string }>(
    batch: T[],
    argsOf: (item: T) => (string | number)[],
  ): {
    keys: string[];
    args: (string | number)[];
    destinations: string[];
    inBatchOrder: <R>(answers: R[]) => R[];
  } {
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
      args.push(this.hostKeys(destination).base, indexes.length);
      for (const index of indexes) args.push(...argsOf(batch[index]));
      order.push(...indexes);
    }
    const inBatchOrder = <R>(answers: R[]): R[] => {
      const sorted = new Array<R>(batch.length);
      order.forEach((index, k) => (sorted[index] = answers[k]));
      return sorted;
    };
    return { keys, args, destinations: [...byDestination.keys()], inBatchOrder };
  }
}
