import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { closeWorker } from '../core/redis/close-worker.js';
import { withTimeout } from '../core/with-timeout.js';
import { QueueLayout } from '../core/redis/queue-layout.js';
import { RedisClients } from '../core/redis/redis.module.js';
import { inSpan } from '../core/tracing/tracing.js';
import { MaintenanceQueue } from './maintenance-queue.module.js';
import { MAINTENANCE_QUEUE, SCHEDULED_JOB, SCHEDULED_JOB_OPTIONS, type ScheduledRun } from './scheduled-job.js';

interface Scheduled {
  every: number;
  run: ScheduledRun;
}

// A run stops at its next step (a page, a batch) once shutdown aborts it; past this bound its job is
// left to stall, and another worker runs it again.
const CLOSE_BOUND_MS = 2_000;
// Between two tries to upsert the schedulers while Redis is away: doubling from the first to the last.
const UPSERT_RETRY_MS = { first: 200, last: 2_000 };
// How often the schedulers' next runs are checked, and how late one may be (at least; 3 intervals for
// longer ones) before the worker is made again: after a Redis Cluster failover a worker's fetch can wait
// for good, or a scheduler's next job be lost, and nothing else would ever run the sweeper again.
const OVERDUE_CHECK_MS = 10_000;
const OVERDUE_AFTER_MS = 30_000;

/**
 * Runs the @ScheduledJob methods of the process as BullMQ job schedulers of the maintenance queue: each
 * scheduler makes one job per interval, which one worker of all takes. The schedulers are upserted at
 * start, and again after every Redis connection trouble, as a Redis restarted without persistence comes
 * back empty; upserting one that exists keeps its next run where it was.
 */
@Injectable()
export class ScheduledJobsWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('ScheduledJobs');
  private readonly scheduled = new Map<string, Scheduled>();
  private readonly running = new Map<string, Promise<unknown>>();
  private readonly stopping = new AbortController();
  private upserting?: Promise<void>;
  private worker?: Worker;
  private connection?: ReturnType<RedisClients['connection']>;
  private overdueCheck?: NodeJS.Timeout;
  private remaking = false;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly maintenance: MaintenanceQueue,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly redis: RedisClients,
  ) {}

  onApplicationBootstrap(): void {
    this.discover();
    this.worker = this.makeWorker();
    this.upsertSchedulers();
    this.overdueCheck = setInterval(() => void this.remakeIfOverdue(), OVERDUE_CHECK_MS).unref();
  }

  private makeWorker(): Worker {
    this.connection = this.redis.connection('maintenance');
    const worker = new Worker(MAINTENANCE_QUEUE, (job) => this.process(job), {
      connection: this.connection,
      prefix: QueueLayout.of(this.config).maintenancePrefix,
      concurrency: this.scheduled.size,
    });
    this.redis.logErrors('maintenance', worker);
    worker.on('error', () => this.upsertSchedulers());
    worker.on('ioredis:close', () => this.upsertSchedulers());
    worker.on('failed', (job, error) =>
      this.logger.warn(`${job?.name} failed (attempt ${job?.attemptsMade} of ${job?.opts.attempts}): ${error.message}`),
    );
    return worker;
  }

  /** A scheduler whose next run is long overdue while Redis answers: the worker is made again, the schedulers upserted. */
  private async remakeIfOverdue(): Promise<void> {
    if (this.remaking || this.stopping.signal.aborted) return;
    const schedulers = await withTimeout(this.maintenance.queue.getJobSchedulers(), OVERDUE_CHECK_MS).catch(
      () => undefined, // Redis away: its connection's errors upsert once it is back
    );
    const now = Date.now();
    const late = schedulers?.find(
      ({ next, every }) => next !== undefined && now - next > Math.max(OVERDUE_AFTER_MS, 3 * Number(every ?? 0)),
    );
    if (!late || this.stopping.signal.aborted) return;
    this.remaking = true;
    try {
      this.logger.warn(`${late.key} is ${now - late.next!} ms overdue: making the maintenance worker again`);
      const [stale, staleConnection] = [this.worker, this.connection];
      this.worker = this.makeWorker();
      this.upsertSchedulers();
      if (stale) await closeWorker(stale, CLOSE_BOUND_MS, this.logger);
      if (staleConnection) this.redis.release(staleConnection); // a cluster client, which BullMQ leaves open
    } finally {
      this.remaking = false;
    }
  }

  /** Every @ScheduledJob method of the process's providers, by job name. */
  private discover(): void {
    for (const wrapper of this.discovery.getProviders()) {
      const instance = wrapper.instance as Record<string, ScheduledRun> | undefined;
      if (!instance || typeof instance !== 'object' || !wrapper.isDependencyTreeStatic()) continue;
      for (const method of this.scanner.getAllMethodNames(Object.getPrototypeOf(instance))) {
        const options = this.discovery.getMetadataByDecorator(SCHEDULED_JOB, wrapper, method);
        if (!options) continue;
        if (this.scheduled.has(options.name)) throw new Error(`Two scheduled jobs are named ${options.name}`);
        this.scheduled.set(options.name, { every: options.every(this.config), run: instance[method].bind(instance) });
      }
    }
  }

  /** Upserts every scheduler, trying again until Redis takes them or the process stops; one loop at a time. */
  private upsertSchedulers(): void {
    this.upserting ??= this.upsertUntilDone().finally(() => (this.upserting = undefined));
  }

  private async upsertUntilDone(): Promise<void> {
    const { signal } = this.stopping;
    for (let wait = UPSERT_RETRY_MS.first; !signal.aborted; wait = Math.min(wait * 2, UPSERT_RETRY_MS.last)) {
      try {
        await Promise.all(
          [...this.scheduled].map(([name, { every }]) =>
            this.maintenance.queue.upsertJobScheduler(name, { every }, { name, opts: SCHEDULED_JOB_OPTIONS }),
          ),
        );
        return;
      } catch {
        // Redis unreachable, which RedisClients logs: tried again until it is back.
        await sleep(wait, undefined, { signal }).catch(() => undefined);
      }
    }
  }

  /** A run that outlasts its interval is joined by the next one in this process, not doubled. */
  private async process(job: Job): Promise<unknown> {
    const scheduled = this.scheduled.get(job.name);
    if (!scheduled) throw new UnrecoverableError(`No scheduled job named ${job.name} in this version`);
    let run = this.running.get(job.name);
    if (!run) {
      // A trace of its own per run: the deliveries a sweep or a recovery re-enqueues are attempted within it.
      run = inSpan(`scheduled ${job.name}`, {}, () => scheduled.run(this.stopping.signal), { root: true }).finally(() =>
        this.running.delete(job.name),
      );
      this.running.set(job.name, run);
    }
    return run;
  }

  /** Stops the runs at their next step and the upserts, then closes the worker. */
  async onModuleDestroy(): Promise<void> {
    this.stopping.abort();
    clearInterval(this.overdueCheck);
    if (this.worker) await closeWorker(this.worker, CLOSE_BOUND_MS, this.logger);
  }
}
