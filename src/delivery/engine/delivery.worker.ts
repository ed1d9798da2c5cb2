import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { closeWorker } from '../../core/redis/close-worker.js';
import { QueueLayout } from '../../core/redis/queue-layout.js';
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

/** A count of free slots; whoever finds none waits in arrival order. */
class Slots {
  private readonly waiting: (() => void)[] = [];

  constructor(private free: number) {}

  async take(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  give(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}

/**
 * The BullMQ consumer, one Worker per delivery shard (QUEUE_SHARDS). Retries belong to the queue: a failed attempt throws, and the job comes back
 * after the delay the schedule chose; a delivery that has ended completes or fails the job. Admission
 * decides when an attempt may start; a job it turns away waits parked, without spending an attempt.
 */
@Injectable()
export class DeliveryWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('DeliveryWorker');
  private workers: Worker<DeliverJobData>[] = [];
  /** With shards, each shard's worker may take every slot, and together they take no more (WORKER_CONCURRENCY). */
  private readonly slots?: Slots;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly attempts: DeliveryAttemptService,
    private readonly admission: Admission,
    private readonly redis: RedisClients,
  ) {
    if (config.queueShards > 1) this.slots = new Slots(config.workerConcurrency);
  }

  onApplicationBootstrap(): void {
    const layout = QueueLayout.of(this.config);
    this.workers = layout.deliveryPrefixes.map((prefix) => {
      const worker = new Worker<DeliverJobData>(DELIVERY_QUEUE, (job, token) => this.run(job, token), {
        connection: this.redis.connection('worker'),
        prefix,
        concurrency: this.config.workerConcurrency,
        lockDuration: this.config.deliveryLockMs,
        stalledInterval: this.config.deliveryLockMs,
        maxStalledCount: 1_000,
        settings: { backoffStrategy: deliveryBackoff },
      });
      this.redis.logErrors('worker', worker);
      worker.on('failed', (job, error) => this.logInfrastructureFailure(job, error));
      return worker;
    });
    this.logger.log(
      `Delivery worker started (concurrency ${this.config.workerConcurrency}, ${layout.shards} queue shard(s))`,
    );
  }

  private async run(job: Job<DeliverJobData>, token?: string): Promise<string> {
    if (!this.slots) return this.process(job, token);
    await this.slots.take();
    try {
      return await this.process(job, token);
    } finally {
      this.slots.give();
    }
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

  /** A receiver's failure is the attempt's record; Postgres or Redis trouble (retried shortly) is logged here. */
  private logInfrastructureFailure(job: Job<DeliverJobData> | undefined, error: Error): void {
    if (error instanceof RetryLaterError || error instanceof UnrecoverableError) return;
    this.logger.warn({
      msg: `Delivery job failed before its attempt was recorded; again in ${INFRASTRUCTURE_RETRY_MS} ms`,
      deliveryId: job?.data.deliveryId,
      error: error.message,
    });
  }

  /** Stops taking jobs and waits for attempts in flight, each bounded by DELIVERY_TIMEOUT_MS. */
  async onModuleDestroy(): Promise<void> {
    const grace = this.config.deliveryTimeoutMs + 1_000;
    await Promise.all(this.workers.map((worker) => closeWorker(worker, grace, this.logger)));
  }
}
