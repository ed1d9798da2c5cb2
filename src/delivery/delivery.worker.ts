import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { DeliveryAttemptService } from './delivery-attempt.service.js';
import { DestinationLimiter } from './destination-limiter.js';
import { DELIVERY_QUEUE, type DeliverJobData } from './delivery-queue.js';

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
// A job over its destination's in-flight cap looks again after 250-375 ms, doubling with each wait up
// to 5 s: a dead receiver's backlog of thousands would otherwise poll Redis thousands of times a second.
const CAPPED_WAIT_MS = 250;
const CAPPED_WAIT_MAX_MS = 5_000;

/** Delay before a job over the cap looks again, after it has waited `waits` times already. */
export function cappedWaitMs(waits: number, random: () => number = Math.random): number {
  const base = Math.min(CAPPED_WAIT_MS * 2 ** Math.min(waits, 16), CAPPED_WAIT_MAX_MS);
  return base + Math.floor(random() * (base / 2));
}

export const deliveryBackoff = (_attemptsMade: number, _type?: string, error?: Error): number =>
  error instanceof RetryLaterError ? error.delayMs : INFRASTRUCTURE_RETRY_MS;

/**
 * The BullMQ consumer. Retries belong to the queue: a failed attempt throws, and the job comes back
 * after the delay the schedule chose; a delivery that has ended completes or fails the job.
 */
@Injectable()
export class DeliveryWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('DeliveryWorker');
  private worker?: Worker<DeliverJobData>;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly attempts: DeliveryAttemptService,
    private readonly limiter: DestinationLimiter,
  ) {}

  onApplicationBootstrap(): void {
    this.worker = new Worker<DeliverJobData>(DELIVERY_QUEUE, (job, token) => this.process(job, token), {
      connection: { url: this.config.redisUrl, maxRetriesPerRequest: null },
      prefix: this.config.queuePrefix,
      concurrency: this.config.workerConcurrency,
      lockDuration: this.config.deliveryLockMs,
      stalledInterval: this.config.deliveryLockMs,
      maxStalledCount: 1_000,
      settings: { backoffStrategy: deliveryBackoff },
    });
    this.worker.on('error', (error) => this.logger.warn(`Worker connection error: ${error.message}`));
    this.logger.log(`Delivery worker started (concurrency ${this.config.workerConcurrency})`);
  }

  async process(job: Job<DeliverJobData>, token?: string): Promise<string> {
    const { deliveryId, trigger, destination } = job.data;
    const capped = this.limiter.enabled && destination !== undefined;
    if (capped && !(await this.limiter.acquire(destination, deliveryId))) {
      // Over the destination's cap: wait without spending an attempt. Every start that was not an
      // attempt (attemptsMade counts those) was a wait.
      const waits = Math.max(0, job.attemptsStarted - job.attemptsMade - 1);
      await job.moveToDelayed(Date.now() + cappedWaitMs(waits), token);
      throw new DelayedError();
    }
    try {
      const result = await this.attempts.run(deliveryId, trigger);
      if (result.status === 'pending') throw new RetryLaterError(result.delayMs, result.reason);
      if (result.status === 'failed') throw new UnrecoverableError(result.reason);
      return result.status;
    } finally {
      if (capped) await this.limiter.release(destination, deliveryId);
    }
  }

  /** Stops taking jobs and waits for attempts in flight (each bounded by DELIVERY_TIMEOUT_MS). */
  async onModuleDestroy(): Promise<void> {
    await this.worker?.close();
  }
}
