import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { closeWorker } from '../../core/redis/close-worker.js';
import { RedisClients } from '../../core/redis/redis.module.js';
import { DeliveryAttemptService, type RunResult } from './delivery-attempt.service.js';
import { DestinationLimiter, type Attempted, type HostSignal } from './destination-limiter.js';
import { DELIVERY_QUEUE, DeliveryQueue, type DeliverJobData } from '../delivery-queue.js';
import { WorkspaceShare } from './workspace-share.js';

/** Thrown after a failed attempt that will be retried; the queue's backoff reads its delay. */
export class RetryLaterError extends Error {
  constructor(
    readonly delayMs: number,
    reason: string,
  ) {
    super(reason);
  }
}

// Postgres or Redis trouble (not a receiver's answer): try the same attempt again shortly.
const INFRASTRUCTURE_RETRY_MS = 5_000;
// A job turned away is woken by the release that frees its turn; this is only the safety net.
const WAKE_FALLBACK_MS = 30_000;
// A job over its workspace's share waits in process for the workspace's next slot; it parks once the
// workspace has freed none for this long.
const SHARE_WAIT_MS = 100;
// Another worker holds the delivery's lease: look again once it has most likely recorded its attempt.
const BUSY_WAIT_MS = 5_000;

export const deliveryBackoff = (_attemptsMade: number, _type?: string, error?: Error): number =>
  error instanceof RetryLaterError ? error.delayMs : INFRASTRUCTURE_RETRY_MS;

const jitter = (ms: number) => ms + Math.floor(Math.random() * (ms / 4));

/** What an attempt showed of its host (webhook-sender's error texts name the socket's error code). */
export function signalOf(result: RunResult): HostSignal {
  if (!('send' in result)) return 'other';
  const { statusCode, error } = result.send;
  if (statusCode !== null) {
    if (statusCode >= 200 && statusCode < 300) return 'ok';
    return statusCode === 429 ? '429' : statusCode === 503 ? '503' : 'answered';
  }
  if (error?.startsWith('Timed out')) return 'timeout';
  if (error?.startsWith('ECONNREFUSED')) return 'refused';
  if (error?.startsWith('ECONNRESET') || error?.includes('socket hang up')) return 'reset';
  return 'other';
}

/**
 * The BullMQ consumer. Retries belong to the queue: a failed attempt throws, and the job comes back
 * after the delay the schedule chose; a delivery that has ended completes or fails the job. A job
 * turned away (its workspace over its share of this worker, its webhook at its cap, its host at its
 * limit or paused)
 * waits in the delayed set without spending an attempt, and is promoted when its turn comes.
 */
@Injectable()
export class DeliveryWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('DeliveryWorker');
  private worker?: Worker<DeliverJobData>;
  private readonly share: WorkspaceShare;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly attempts: DeliveryAttemptService,
    private readonly limiter: DestinationLimiter,
    private readonly queue: DeliveryQueue,
    private readonly redis: RedisClients,
  ) {
    this.share = new WorkspaceShare(config.workerConcurrency);
  }

  onApplicationBootstrap(): void {
    this.worker = new Worker<DeliverJobData>(DELIVERY_QUEUE, (job, token) => this.process(job, token), {
      // Options, not a client: BullMQ makes and owns the connections, the blocking one its own.
      connection: this.redis.options('worker'),
      prefix: this.config.queuePrefix,
      concurrency: this.config.workerConcurrency,
      lockDuration: this.config.deliveryLockMs,
      stalledInterval: this.config.deliveryLockMs,
      maxStalledCount: 1_000,
      settings: { backoffStrategy: deliveryBackoff },
    });
    this.redis.logErrors('worker', this.worker);
    this.logger.log(`Delivery worker started (concurrency ${this.config.workerConcurrency})`);
  }

  async process(job: Job<DeliverJobData>, token?: string): Promise<string> {
    const { deliveryId, destination, workspaceId, webhookId } = job.data;
    const jobId = job.id ?? deliveryId;
    if (!this.share.enter(workspaceId) && !(await this.share.waitTurn(workspaceId, SHARE_WAIT_MS))) {
      await job.moveToDelayed(Date.now() + jitter(WAKE_FALLBACK_MS), token);
      if (this.share.park(workspaceId, jobId)) await this.wake([jobId]);
      throw new DelayedError();
    }
    let holder: string | undefined;
    const attempted: Attempted = { signal: 'other', latencyMs: 0, admittedAt: 0 };
    try {
      const admission = await this.limiter.acquire(destination, `${deliveryId}:${token}`, jobId, webhookId);
      if (!admission.admitted) {
        // Paused by the breaker: wait until it may be probed. At a limit: wait to be woken by a release.
        if (admission.until !== null) await this.wait(job, token, admission.until);
        await this.wait(job, token, Date.now() + WAKE_FALLBACK_MS, { destination, webhookId });
      }
      holder = `${deliveryId}:${token}`;
      attempted.admittedAt = Date.now();
      const result = await this.attempts.run(job.data);
      attempted.signal = signalOf(result);
      if ('send' in result) attempted.latencyMs = result.send.durationMs;
      if (result.status === 'busy') return this.wait(job, token, Date.now() + BUSY_WAIT_MS);
      if (result.status === 'pending') throw new RetryLaterError(result.delayMs, result.reason);
      if (result.status === 'failed') throw new UnrecoverableError(result.reason);
      return result.status;
    } finally {
      if (holder) void this.limiter.release(destination, holder, webhookId, attempted).then((ids) => this.wake(ids));
      const next = this.share.leave(workspaceId);
      if (next) void this.wake([next]);
    }
  }

  /**
   * Parks the job in the delayed set until `until` without spending an attempt. A job waiting for a
   * slot checks once more after parking, so a slot freed meanwhile is not missed.
   */
  private async wait(
    job: Job<DeliverJobData>,
    token: string | undefined,
    until: number,
    slot?: { destination: string; webhookId: string },
  ): Promise<never> {
    await job.moveToDelayed(Date.now() + jitter(Math.max(0, until - Date.now())), token);
    if (slot && (await this.limiter.hasRoom(slot.destination, slot.webhookId))) await this.wake([job.id ?? '']);
    throw new DelayedError();
  }

  /** Moves waiting jobs to the front of the line; a job that is no longer waiting is skipped. */
  private async wake(jobIds: string[]): Promise<void> {
    for (const id of jobIds) {
      const job = await this.queue.queue.getJob(id).catch(() => undefined);
      await job?.promote().catch(() => undefined);
    }
  }

  /** Stops taking jobs and waits for attempts in flight, each bounded by DELIVERY_TIMEOUT_MS. */
  async onModuleDestroy(): Promise<void> {
    if (this.worker) await closeWorker(this.worker, this.config.deliveryTimeoutMs + 1_000, this.logger);
  }
}
