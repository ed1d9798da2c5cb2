import type { INestApplication } from '@nestjs/common';
import { Queue, type Job, type Worker } from 'bullmq';
import { MAINTENANCE_QUEUE } from '../../src/scheduling/scheduled-job.js';
import { ScheduledJobsWorker } from '../../src/scheduling/scheduled-jobs.worker.js';
import { waitFor } from '../support/receiver.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { createReplica, createTestApp, TEST_REDIS_URL, type TestApp } from '../support/test-app.js';
import { ensureBuilt, spawnWorker, type WorkerProcess } from '../support/worker-process.js';

const EVERY_MS = 500;
const SWEEP = 'sweep-overdue-deliveries';
const SCHEDULERS = [
  { key: 'create-delivery-partitions', every: 3_600_000 },
  { key: 'delete-audit-events-past-retention', every: 3_600_000 },
  { key: 'delete-deliveries-past-retention', every: EVERY_MS },
  { key: 'delete-portal-links-past-retention', every: 3_600_000 },
  { key: 'purge-expired-idempotency-keys', every: 60_000 },
  { key: 'run-recoveries', every: EVERY_MS },
  { key: SWEEP, every: EVERY_MS },
];

/** The maintenance queue of a test app, reached directly (not through the app). */
function maintenanceQueue(t: TestApp): Queue {
  const queue = new Queue(MAINTENANCE_QUEUE, { connection: { url: TEST_REDIS_URL }, prefix: t.config.queuePrefix });
  queue.on('error', () => undefined);
  return queue;
}

/** Waits for the maintenance queue's job schedulers, then checks their ids and intervals. */
async function expectSchedulers(queue: Queue, timeoutMs: number): Promise<void> {
  await waitFor(async () => (await queue.getJobSchedulersCount()) === SCHEDULERS.length, timeoutMs, 'the schedulers');
  const schedulers = (await queue.getJobSchedulers()).map(({ key, every }) => ({ key, every }));
  expect(schedulers.sort((a, b) => a.key.localeCompare(b.key))).toEqual(SCHEDULERS);
}

// BullMQ names each run's job after its scheduler and the time slot it runs in: repeat:<id>:<slot ms>.
const slotOf = (job: Job) => Number(job.id!.split(':').pop());

describe('scheduled work as BullMQ job schedulers (two worker instances, one QUEUE_PREFIX)', () => {
  let t: TestApp;
  let replica: INestApplication;
  let queue: Queue;

  beforeAll(async () => {
    t = await createTestApp({ WORKER_ENABLED: 'true', SWEEP_INTERVAL_MS: String(EVERY_MS) });
    replica = await createReplica(t);
    queue = maintenanceQueue(t);
  });
  afterAll(async () => {
    await queue.close();
    await replica.close();
    await t.close();
  });

  it('shows the sweeper, both retentions, partition upkeep, recovery runs and the idempotency-key purge as job schedulers', async () => {
    await expectSchedulers(queue, 10_000);
  });

  it('runs each scheduler once per interval, not once per worker', async () => {
    const since = Date.now();
    const sweeps = await waitFor(
      async () => {
        const jobs = (await queue.getJobs(['completed'])).filter(
          (job) => job.name === SWEEP && job.processedOn! >= since,
        );
        return jobs.length >= 6 ? jobs : null;
      },
      20_000,
      'six sweeps',
    );

    const slots = sweeps.map(slotOf).sort((a, b) => a - b);
    expect(new Set(slots).size).toBe(slots.length);
    // One scheduler: every run falls in a slot of the same interval grid, one worker ran it, once.
    expect(new Set(slots.map((slot) => slot % EVERY_MS)).size).toBe(1);
    for (const job of sweeps) expect(job.attemptsStarted).toBe(1);
    expect(slots[slots.length - 1] - slots[0]).toBeGreaterThanOrEqual((slots.length - 1) * EVERY_MS);
    // Both instances upserted at start, yet the purge of expired keys (every 60 s) ran once so far.
    const purges = (await queue.getJobs(['completed', 'active'])).filter(
      (job) => job.name === 'purge-expired-idempotency-keys',
    );
    expect(purges).toHaveLength(1);
  }, 30_000);

  it('retries a failing run: the queue tries the same run again until it succeeds', async () => {
    const since = Date.now();
    await t.dataSource.query('ALTER TABLE deliveries RENAME TO deliveries_away');
    let failed: Job;
    try {
      failed = await waitFor(
        async () => {
          const jobs = await queue.getJobs(['delayed', 'waiting', 'active']);
          return jobs.find((job) => job.name === SWEEP && job.attemptsMade >= 1);
        },
        20_000,
        'a failed sweep waiting for its retry',
      );
      // A few more runs fail meanwhile (one per interval), each to be retried.
      await new Promise((resolve) => setTimeout(resolve, 3 * EVERY_MS));
    } finally {
      await t.dataSource.query('ALTER TABLE deliveries_away RENAME TO deliveries');
    }
    expect(failed.failedReason).toMatch(/relation "deliveries" does not exist/);

    // A run that failed, then completed: attemptsMade counts the failure and the success.
    const retried = await waitFor(
      async () => {
        const jobs = await queue.getJobs(['completed']);
        return jobs.find((job) => job.name === SWEEP && job.timestamp >= since - EVERY_MS && job.attemptsMade >= 2);
      },
      20_000,
      'a failed sweep to be retried and complete',
    );
    expect(retried!.returnvalue).toEqual(expect.any(Number));
  }, 60_000);

  it('makes the worker again when the sweeper is 30 s overdue (a fetch that waits for good, as after a failover)', async () => {
    // Both instances' maintenance workers stop fetching, as a blocking fetch on a lost connection would.
    const workerOf = (app: INestApplication) => (app.get(ScheduledJobsWorker) as unknown as { worker: Worker }).worker;
    await Promise.all([workerOf(t.app), workerOf(replica)].map((worker) => worker.pause(true)));
    const stoppedAt = Date.now();
    const resumed = await waitFor(
      async () => {
        const jobs = await queue.getJobs(['completed']);
        return jobs.find((job) => job.name === SWEEP && job.processedOn! > stoppedAt + 2 * EVERY_MS);
      },
      50_000,
      'a sweep by a worker made again',
    );
    // Not before the sweeper was 30 s overdue; then within a check (10 s) or two.
    expect(resumed!.processedOn! - stoppedAt).toBeGreaterThanOrEqual(30_000);
    expect(workerOf(t.app).isPaused() && workerOf(replica).isPaused()).toBe(false);
  }, 70_000);
});

describe('which processes run scheduled work', () => {
  let t: TestApp;
  let queue: Queue;
  let worker: WorkerProcess | undefined;

  beforeAll(async () => {
    ensureBuilt();
    t = await createTestApp(); // WORKER_ENABLED=false
    queue = maintenanceQueue(t);
  }, 120_000);
  afterAll(async () => {
    if (worker && worker.child.exitCode === null) worker.child.kill('SIGKILL');
    await worker?.exited;
    await queue.close();
    await t.close();
  });

  it('not an api without its worker (WORKER_ENABLED=false)', () => {
    expect(() => t.app.get(ScheduledJobsWorker, { strict: false })).toThrow();
  });

  it('the worker process, the purge of expired idempotency keys included', async () => {
    worker = spawnWorker(t.config, { SWEEP_INTERVAL_MS: String(EVERY_MS) });
    await expectSchedulers(queue, 20_000);
    await waitFor(
      async () => (await queue.getJobs(['completed'])).some((job) => job.name === 'purge-expired-idempotency-keys'),
      20_000,
      'a purge of expired keys',
    );
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toEqual({ code: 0, signal: null });
  }, 60_000);
});

describe('scheduled work after Redis comes back empty', () => {
  let t: TestApp;
  let queue: Queue;
  const redis = TcpProxy.to(TEST_REDIS_URL, 6379);

  beforeAll(async () => {
    await redis.start();
    t = await createTestApp({
      WORKER_ENABLED: 'true',
      SWEEP_INTERVAL_MS: String(EVERY_MS),
      REDIS_URL: redis.url(TEST_REDIS_URL),
    });
    queue = maintenanceQueue(t);
  });
  afterAll(async () => {
    await queue.close();
    await t.close();
    await redis.stop();
  });

  it('upserts the job schedulers again once Redis answers', async () => {
    await expectSchedulers(queue, 10_000);

    await redis.stop();
    await queue.obliterate({ force: true }); // what a Redis restarted without persistence holds: nothing
    expect(await queue.getJobSchedulersCount()).toBe(0);
    await redis.start();

    await expectSchedulers(queue, 20_000);
    const since = Date.now();
    await waitFor(
      async () => (await queue.getJobs(['completed'])).some((job) => job.name === SWEEP && job.finishedOn! >= since),
      20_000,
      'a sweep after the restart',
    );
  }, 60_000);
});
