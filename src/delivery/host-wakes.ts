import { Inject, Injectable, Logger } from '@nestjs/common';
import { Job, Queue, type JobsOptions } from 'bullmq';
import { Batcher } from '../core/batcher.js';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { QueueLayout } from '../core/redis/queue-layout.js';
import { RedisClients, type RedisClient } from '../core/redis/redis.module.js';
import { inSpan, SpanKind } from '../core/tracing/tracing.js';
import { withTimeout } from '../core/with-timeout.js';

export const DELIVERY_QUEUE = 'deliveries';
export const DRAIN_JOB = 'drain';

/** A host's wake: the host to drain; a lane above 0 is one more worker's part of a busy host (DESIGN 5). */
export interface DrainJobData {
  host: string;
  lane?: number;
}

/** A host whose deliveries fall due at `at` (now when absent). */
export interface Wake {
  host: string;
  at?: Date;
}

/** The host of a url as deliveries name it (url_destination in SQL agrees for the urls webhooks accept). */
export const destinationOf = (url: string): string => new URL(url).host;

/** A host's one wake job (its lane 0), or its lane's; BullMQ refuses ':' in an id, which a host:port has. */
export const drainJobId = (host: string, lane = 0): string =>
  `drain|${host.replaceAll(':', '|')}${lane > 0 ? `#${lane}` : ''}`;

/** A wake is done once it ran: its drain leaves the next one. Failures (Redis trouble) come back soon. */
const WAKE_JOB_OPTIONS: JobsOptions = {
  attempts: 1_000_000,
  backoff: { type: 'fixed', delay: 1_000 },
  removeOnComplete: true,
  removeOnFail: true,
};

// A request never waits long on Redis: a wake not made by then is left to the sweeper.
const WAKE_TIMEOUT_MS = 2_000;
// The wakes of at most this many callers (submissions, a sweeper pass) go in one round trip per shard.
const MAX_WAKE_BATCH = 500;
// A wake found missing is added, then looked at again (another may have added it later meanwhile).
const MAX_ROUNDS = 3;

type WakeState = 'absent' | 'later' | 'ok';

/**
 * Redis's side of the one schedule (DESIGN 5): at most one wake per host with pending deliveries, a
 * delayed BullMQ job in its host's shard (QUEUE_SHARDS), due at the host's earliest due time. Postgres
 * holds the deliveries; nothing here names one.
 *
 * No wake is lost. Two orders are raced, and Redis runs each command alone, so one of two always sees
 * the other:
 * - Whoever makes a delivery due commits it, then (wake) lowers the host's `rewake` mark to its due time
 *   (ZADD LT), then looks at the host's job: none is added, a later one moved earlier; a running one (a
 *   drain) is left alone.
 * - A drain clears the mark before it first looks for due deliveries (clearRewake: whatever was marked
 *   before is committed, so its pick sees it), and when it ends it first leaves its job delayed to the
 *   next due time (or completes it), then takes the mark (takeRewake) and wakes the host again at the
 *   mark's time when that is sooner.
 * A mark set while the drain ran is seen by its end; a job left delayed before the mark is seen by the
 * producer's look. The sweeper covers a worker that dies between the two.
 */
@Injectable()
export class HostWakes {
  private readonly logger = new Logger('HostWakes');
  readonly layout: QueueLayout;
  /** The shards' queues, by shard number. */
  readonly queues: Queue<DrainJobData>[];
  private readonly redis: RedisClient;
  /** Group commit per shard: the wakes of every caller that comes while the last round trip is out. */
  private readonly batches: Batcher<Wake, void>[];

  constructor(@Inject(APP_CONFIG) config: AppConfig, clients: RedisClients) {
    this.layout = QueueLayout.of(config);
    this.redis = clients.get('queue');
    this.queues = this.layout.deliveryPrefixes.map((prefix) => {
      const queue = new Queue<DrainJobData>(DELIVERY_QUEUE, { connection: this.redis, prefix });
      // Its connection's errors are logged by RedisClients; without a listener BullMQ prints them to stderr.
      queue.on('error', () => undefined);
      return queue;
    });
    this.batches = this.queues.map(
      (_, shard) =>
        new Batcher<Wake, void>(
          async (wakes) => {
            await this.wakeShard(shard, earliestPerHost(wakes));
            return wakes.map(() => undefined);
          },
          1,
          MAX_WAKE_BATCH,
        ),
    );
  }

  queueOf(host: string): Queue<DrainJobData> {
    return this.queues[this.layout.shardOf(host)];
  }

  /** The shard's mark of hosts made due while their drain ran: host -> the earliest such due time (ms). */
  rewakeKey(host: string): string {
    return `${this.layout.deliveryPrefix(this.layout.shardOf(host))}:rewake`;
  }

  /**
   * Wakes the hosts no later than their times, after the deliveries that made them due have committed.
   * Never throws: a wake Redis does not take now is the sweeper's to make.
   */
  async wake(wakes: Wake[]): Promise<void> {
    try {
      await this.wakeOrThrow(wakes);
    } catch (error) {
      this.logger.warn(`Waking ${wakes.length} host(s) deferred to the sweeper: ${(error as Error).message}`);
    }
  }

  /** As wake, but throws when Redis does not take them (the sweeper stops its pass then). */
  async wakeOrThrow(wakes: Wake[]): Promise<void> {
    if (wakes.length === 0) return;
    const attributes = { 'messaging.destination.name': DELIVERY_QUEUE, 'messaging.batch.message_count': wakes.length };
    await inSpan(
      'delivery.wake',
      attributes,
      () =>
        withTimeout(
          Promise.all(wakes.map((wake) => this.batches[this.layout.shardOf(wake.host)].add(wake))),
          WAKE_TIMEOUT_MS,
        ),
      { kind: SpanKind.PRODUCER },
    );
  }

  /** Marks, looks, then adds the missing jobs and moves the later ones, until each host's wake is in time. */
  private async wakeShard(shard: number, wakes: Wake[]): Promise<void> {
    let pending = wakes;
    for (let round = 0; round < MAX_ROUNDS && pending.length > 0; round++) {
      const states = await this.look(shard, pending);
      const absent = pending.filter((_, i) => states[i] === 'absent');
      const later = pending.filter((_, i) => states[i] === 'later');
      await Promise.all(later.map((wake) => this.moveEarlier(shard, wake)));
      if (absent.length > 0) {
        await this.queues[shard].addBulk(
          absent.map(({ host, at }) => ({
            name: DRAIN_JOB,
            data: { host },
            opts: { ...WAKE_JOB_OPTIONS, jobId: drainJobId(host), delay: delayOf(at) },
          })),
        );
      }
      pending = absent;
    }
  }

  /** One pipeline: per host, lower its mark, then its job's state (absent, delayed later than asked, or in time). */
  private async look(shard: number, wakes: Wake[]): Promise<WakeState[]> {
    const queue = this.queues[shard];
    const delayed = queue.toKey('delayed');
    const rewake = `${this.layout.deliveryPrefix(shard)}:rewake`;
    const pipeline = this.redis.pipeline();
    for (const { host, at } of wakes) {
      const jobId = drainJobId(host);
      pipeline.zadd(rewake, 'LT', String(timeOf(at)), host);
      pipeline.exists(queue.toKey(jobId));
      pipeline.zscore(delayed, jobId);
    }
    const results = (await pipeline.exec()) ?? [];
    return wakes.map(({ at }, i) => {
      const [markError] = results[3 * i] ?? [new Error('no answer')];
      const [existsError, exists] = results[3 * i + 1] ?? [new Error('no answer')];
      const [scoreError, score] = results[3 * i + 2] ?? [new Error('no answer')];
      if (markError || existsError || scoreError) throw markError ?? existsError ?? scoreError;
      if (exists === 0) return 'absent';
      // BullMQ scores a delayed job by its time in ms times 0x1000 (plus a counter).
      if (score !== null && Math.floor(Number(score) / 0x1000) > timeOf(at)) return 'later';
      return 'ok';
    });
  }

  /** Moves a delayed wake to `at`; one that is no longer delayed is running or ran, which is as good. */
  private async moveEarlier(shard: number, { host, at }: Wake): Promise<void> {
    const job = new Job<DrainJobData>(this.queues[shard], DRAIN_JOB, { host }, {}, drainJobId(host));
    await job.changeDelay(delayOf(at)).catch(() => undefined);
  }

  /** Drains for lanes 1 to lanes - 1 of a busy host, each on whichever worker takes it; one that runs is left alone. */
  async addLanes(host: string, lanes: number): Promise<void> {
    if (lanes <= 1) return;
    const jobs = Array.from({ length: lanes - 1 }, (_, i) => ({
      name: DRAIN_JOB,
      data: { host, lane: i + 1 },
      opts: { ...WAKE_JOB_OPTIONS, jobId: drainJobId(host, i + 1) },
    }));
    await this.queueOf(host).addBulk(jobs);
  }

  /** A drain starts: what was marked before is committed, so its first look sees it. */
  async clearRewake(host: string): Promise<void> {
    await this.redis.zrem(this.rewakeKey(host), host);
  }

  /** A drain ended: the mark set since it began, taken atomically; null when none. */
  async takeRewake(host: string): Promise<Date | null> {
    const key = this.rewakeKey(host);
    const results = await this.redis.multi().zscore(key, host).zrem(key, host).exec();
    const [error, score] = results?.[0] ?? [new Error('no answer')];
    if (error) throw error;
    return score === null || score === undefined ? null : new Date(Number(score));
  }
}

const timeOf = (at: Date | undefined) => at?.getTime() ?? Date.now();
const delayOf = (at: Date | undefined) => Math.max(0, timeOf(at) - Date.now());

/** One wake per host, at its earliest time. */
function earliestPerHost(wakes: Wake[]): Wake[] {
  const earliest = new Map<string, Wake>();
  for (const wake of wakes) {
    const seen = earliest.get(wake.host);
    if (!seen || timeOf(wake.at) < timeOf(seen.at)) earliest.set(wake.host, wake);
  }
  return [...earliest.values()];
}
