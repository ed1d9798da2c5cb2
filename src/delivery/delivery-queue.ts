import { Inject, Injectable, Logger } from '@nestjs/common';
import { Queue, type JobsOptions } from 'bullmq';
import { Batcher } from '../core/batcher.js';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { QueueLayout } from '../core/redis/queue-layout.js';
import { RedisClients, type RedisClient } from '../core/redis/redis.module.js';
import { currentTraceCarrier, inSpan, SpanKind, type TraceCarrier } from '../core/tracing/tracing.js';
import { withTimeout } from '../core/with-timeout.js';

export const DELIVERY_QUEUE = 'deliveries';
export const DELIVER_JOB = 'deliver';

export interface DeliverJobData {
  deliveryId: string;
  /**
   * The delivery's created_at (ISO), which names its partition (DESIGN 9); absent from jobs queued before
   * the tables were partitioned, whose claim looks it up.
   */
  createdAt?: string;
  trigger: 'scheduled' | 'manual';
  /** host:port of the webhook url (webhooks are never updated), for the host's adaptive in-flight limit. */
  destination: string;
  /** The webhook's url, so the worker connects before it claims. */
  url: string;
  /** For the per-workspace share of a worker's slots. */
  workspaceId: string;
  /** For the per-webhook in-flight cap. */
  webhookId: string;
  /**
   * The webhook's own in-flight cap as the enqueuer read it (null: none, the default; absent: not read),
   * for admission, which runs before the claim reads the webhook (WebhookCaps).
   */
  maxInFlight?: number | null;
  /** W3C trace context of the enqueue, so each attempt joins its trace; absent when tracing is off. */
  trace?: TraceCarrier;
}

export interface DeliveryToEnqueue {
  deliveryId: string;
  createdAt: Date;
  url: string;
  workspaceId: string;
  webhookId: string;
  maxInFlight?: number | null;
  /** Defaults to the delivery id; a manual retry uses manualJobId, as the last job may not be gone yet. */
  jobId?: string;
}

/** A delivery whose jobs are to go: its id and its max_attempts. */
export interface DeliveryJobs {
  deliveryId: string;
  maxAttempts: number;
}

export const destinationOf = (url: string): string => new URL(url).host;

/**
 * The job of a manual retry, named after the attempt it allows (max_attempts, which only a retry
 * raises), so whoever cancels the delivery can name it from the row.
 */
export const manualJobId = (deliveryId: string, maxAttempts: number): string => `${deliveryId}-manual-${maxAttempts}`;

/** Postgres decides when a delivery is done; the job only carries the id, retried until then. */
export const DELIVER_JOB_OPTIONS: JobsOptions = {
  attempts: 1_000_000,
  backoff: { type: 'delivery' },
  removeOnComplete: true,
  removeOnFail: true,
};

// A request never waits long on Redis: what is not enqueued by then is left to the sweeper.
const ENQUEUE_TIMEOUT_MS = 2_000;
// The jobs of at most this many callers (one submission's, or a sweeper pass's) go in one addBulk.
const MAX_ENQUEUE_BATCH = 500;

type BulkJob = Parameters<Queue<DeliverJobData>['addBulk']>[0][number];

/**
 * Producer side of the delivery queues: one job per delivery, jobId = delivery id, in the queue of its
 * host's shard (QUEUE_SHARDS; one queue by default), where the host's admission state lives too.
 */
@Injectable()
export class DeliveryQueue {
  private readonly logger = new Logger('DeliveryQueue');
  readonly layout: QueueLayout;
  /** The shards' queues, by shard number. */
  readonly queues: Queue<DeliverJobData>[];
  /**
   * Group commit, per shard: one addBulk (one pipeline, one MULTI) carries the jobs of every caller that
   * comes while the previous one is out, instead of one each, and each caller still waits for its own jobs.
   * A failure fails them all, which loses nothing: the sweeper enqueues due deliveries that have no job.
   */
  private readonly bulks: Batcher<BulkJob[], void>[];
  private readonly redis: RedisClient;

  constructor(@Inject(APP_CONFIG) config: AppConfig, clients: RedisClients) {
    this.layout = QueueLayout.of(config);
    this.redis = clients.get('queue');
    // The producer connection is RedisClients' and closes with it; a Queue holds no timer of its own.
    this.queues = this.layout.deliveryPrefixes.map((prefix) => {
      const queue = new Queue<DeliverJobData>(DELIVERY_QUEUE, { connection: this.redis, prefix });
      // Its connection's errors, which BullMQ repeats here, are logged by RedisClients; without a listener
      // BullMQ would print each to stderr, outside the JSON log.
      queue.on('error', () => undefined);
      return queue;
    });
    this.bulks = this.queues.map(
      (queue) =>
        new Batcher<BulkJob[], void>(
          async (groups) => {
            await queue.addBulk(groups.flat());
            return groups.map(() => undefined);
          },
          1,
          MAX_ENQUEUE_BATCH,
        ),
    );
  }

  /** The queue of the host's shard. */
  queueOf(destination: string): Queue<DeliverJobData> {
    return this.queues[this.layout.shardOf(destination)];
  }

  /**
   * Adds jobs for deliveries already committed to Postgres. A job that exists is left alone, and a
   * failure here loses nothing: the sweeper enqueues due pending deliveries that have no job.
   */
  async enqueue(deliveries: DeliveryToEnqueue[], trigger: DeliverJobData['trigger'] = 'scheduled'): Promise<void> {
    try {
      await this.add(deliveries, trigger);
    } catch (error) {
      this.logger.warn(
        `Enqueue of ${deliveries.length} deliveries deferred to the sweeper: ${(error as Error).message}`,
      );
    }
  }

  /** As enqueue, but throws when Redis does not take the jobs (the sweeper stops its pass then). */
  async add(deliveries: DeliveryToEnqueue[], trigger: DeliverJobData['trigger'] = 'scheduled'): Promise<void> {
    if (deliveries.length === 0) return;
    const attributes = {
      'messaging.destination.name': DELIVERY_QUEUE,
      'messaging.batch.message_count': deliveries.length,
    };
    await inSpan('delivery.enqueue', attributes, () => this.addJobs(deliveries, trigger), { kind: SpanKind.PRODUCER });
  }

  /** Each shard's jobs in its own addBulk, all at once. */
  private async addJobs(deliveries: DeliveryToEnqueue[], trigger: DeliverJobData['trigger']): Promise<void> {
    const trace = currentTraceCarrier();
    const byShard = this.byShard(
      deliveries,
      ({ deliveryId, createdAt, url, workspaceId, webhookId, maxInFlight, jobId }, destination): BulkJob => ({
        name: DELIVER_JOB,
        data: {
          deliveryId,
          createdAt: createdAt.toISOString(),
          trigger,
          destination,
          url,
          workspaceId,
          webhookId,
          ...(maxInFlight !== undefined && { maxInFlight }),
          ...(trace && { trace }),
        },
        opts: { ...DELIVER_JOB_OPTIONS, jobId: jobId ?? deliveryId },
      }),
    );
    const added = [...byShard].map(([shard, jobs]) => this.bulks[shard].add(jobs));
    await withTimeout(Promise.all(added), ENQUEUE_TIMEOUT_MS);
  }

  /** `each` of the deliveries (given its host), grouped by the shard of its host. */
  private byShard<T>(deliveries: DeliveryToEnqueue[], each: (delivery: DeliveryToEnqueue, destination: string) => T) {
    const byShard = new Map<number, T[]>();
    for (const delivery of deliveries) {
      const destination = destinationOf(delivery.url);
      const shard = this.layout.shardOf(destination);
      const list = byShard.get(shard) ?? [];
      list.push(each(delivery, destination));
      byShard.set(shard, list);
    }
    return byShard;
  }

  /**
   * The deliveries whose job (jobId, else the delivery id) is not in their host's queue: one pipeline of
   * EXISTS per shard (a shard's keys share its hash tag), a microsecond each in Redis where adding a job
   * that exists still runs BullMQ's add script with the job's data.
   */
  async withoutJob(deliveries: DeliveryToEnqueue[]): Promise<DeliveryToEnqueue[]> {
    const missing = [...this.byShard(deliveries, (delivery) => delivery)].map(async ([shard, list]) => {
      const pipeline = this.redis.pipeline();
      for (const { deliveryId, jobId } of list) pipeline.exists(this.queues[shard].toKey(jobId ?? deliveryId));
      const results = (await pipeline.exec()) ?? [];
      return list.filter((_, i) => {
        const [error, found] = results[i] ?? [new Error('no answer')];
        if (error) throw error;
        return found === 0;
      });
    });
    return (await withTimeout(Promise.all(missing), ENQUEUE_TIMEOUT_MS)).flat();
  }

  /**
   * Makes a pending delivery's job run now (DESIGN 7.2): its delayed job (the scheduled one, or a manual
   * retry's) is promoted, a missing one added; one already waiting or running is left as it is. A
   * failure here loses nothing: the sweeper enqueues due deliveries that have no job.
   */
  async runNow(delivery: DeliveryToEnqueue & DeliveryJobs): Promise<void> {
    const { deliveryId, maxAttempts } = delivery;
    const queue = this.queueOf(destinationOf(delivery.url));
    const promoteOrAdd = async () => {
      for (const jobId of [deliveryId, manualJobId(deliveryId, maxAttempts)]) {
        const job = await queue.getJob(jobId);
        if (!job) continue;
        // Throws when the job is no longer delayed (a worker took it meanwhile): nothing to move then.
        await job.promote().catch(() => undefined);
        return;
      }
      await this.add([delivery]);
    };
    await withTimeout(promoteOrAdd(), ENQUEUE_TIMEOUT_MS).catch((error: Error) =>
      this.logger.warn(`Moving delivery ${deliveryId} to now deferred to the sweeper: ${error.message}`),
    );
  }

  /**
   * Drops the jobs of a webhook's cancelled deliveries, the scheduled one and a manual retry's; one that
   * is running finds its delivery cancelled.
   */
  async remove(webhookUrl: string, deliveries: DeliveryJobs[]): Promise<void> {
    const queue = this.queueOf(destinationOf(webhookUrl));
    const jobIds = deliveries.flatMap(({ deliveryId, maxAttempts }) => [
      deliveryId,
      manualJobId(deliveryId, maxAttempts),
    ]);
    const removals = Promise.all(jobIds.map((id) => queue.remove(id).catch(() => 0)));
    await withTimeout(removals, ENQUEUE_TIMEOUT_MS).catch(() => undefined);
  }
}
