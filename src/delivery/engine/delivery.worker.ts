import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { closeWorker } from '../../core/redis/close-worker.js';
import { RedisClients } from '../../core/redis/redis.module.js';
import { DELIVERY_QUEUE, type DeliverJobData } from '../delivery-queue.js';
import { Admission, signalOf } from './admission/admission.js';
import { DeliveryAttemptService, type RunResult } from './delivery-attempt.service.js';
import type { SendResult } from './webhook-sender.js';

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
// Another worker holds the delivery's lease: look again once it has most likely recorded its attempt.
const BUSY_WAIT_MS = 5_000;

export const deliveryBackoff = (_attemptsMade: number, _type?: string, error?: Error): number =>
  error instanceof RetryLaterError ? error.delayMs : INFRASTRUCTURE_RETRY_MS;

/**
 * The BullMQ consumer. Retries belong to the queue: a failed attempt throws, and the job comes back
 * after the delay the schedule chose; a delivery that has ended completes or fails the job. Admission
 * decides when an attempt may start; a job it turns away waits parked, without spending an attempt.
 */
@Injectable()
export class DeliveryWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('DeliveryWorker');
  private worker?: Worker<DeliverJobData>;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly attempts: DeliveryAttemptService,
    private readonly admission: Admission,
    private readonly redis: RedisClients,
  ) {}

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
    const ticket = await this.admission.enter(job, token);
    // The host's slot is given back as soon as the receiver has answered: recording it needs no host.
    const answered = (send: SendResult) =>
      this.admission.answered(ticket, { signal: signalOf(send), latencyMs: send.durationMs });
    try {
      const result: RunResult = await this.attempts.run(job.data, answered);
      if (result.status === 'busy') {
        await job.moveToDelayed(Date.now() + BUSY_WAIT_MS, token);
        throw new DelayedError();
      }
      if (result.status === 'pending') throw new RetryLaterError(result.delayMs, result.reason);
      if (result.status === 'failed') throw new UnrecoverableError(result.reason);
      return result.status;
    } finally {
      this.admission.leave(ticket);
    }
  }

  /** Stops taking jobs and waits for attempts in flight, each bounded by DELIVERY_TIMEOUT_MS. */
  async onModuleDestroy(): Promise<void> {
    if (this.worker) await closeWorker(this.worker, this.config.deliveryTimeoutMs + 1_000, this.logger);
  }
}
