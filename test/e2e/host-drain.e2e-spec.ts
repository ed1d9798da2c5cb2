import { Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { QueueLayout } from '../../src/core/redis/queue-layout.js';
import {
  DELIVERY_QUEUE,
  destinationOf,
  drainJobId,
  HostWakes,
  type DrainJobData,
} from '../../src/delivery/host-wakes.js';
import { client, registerWebhook } from '../support/management-api.js';
import { getDelivery, listDeliveries, setupWebhook, submit, useFastDeliveryApp } from '../support/delivery.js';
import { pace as pause, Receiver, waitFor } from '../support/receiver.js';
import { ensureBuilt, spawnWorker, type WorkerProcess } from '../support/worker-process.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

// The one schedule (DESIGN 5): Postgres holds each pending delivery, Redis a wake per host, a drain per wake.

describe('host drains, with the sweeper out of the way (a lost wake would lose its deliveries)', () => {
  const env = useFastDeliveryApp({ SWEEP_INTERVAL_MS: '3600000' });

  it('delivers every submission made while drains end, exactly once (the no-lost-wake race, raced)', async () => {
    const receivers = await Promise.all([env.startReceiver(), env.startReceiver(), env.startReceiver()]);
    const hooks = await Promise.all(receivers.map((r) => setupWebhook(env.t, r.url)));
    const per = 60;
    // Jittered gaps from 0 to 4 ms: many submissions land as their host's drain finds nothing more and ends.
    for (let i = 0; i < per; i++) {
      await Promise.all(hooks.map(({ api, calculator }) => submit(api, calculator.id, { data: { i } })));
      await pause(Math.floor(Math.random() * 5));
    }
    await waitFor(() => receivers.every((r) => r.requests.length >= per), 15_000, 'every delivery');
    await pause(300);
    for (const receiver of receivers) {
      const ids = receiver.requests.map((r) => r.headers['webhook-id']);
      expect(new Set(ids).size).toBe(per);
      expect(ids).toHaveLength(per);
    }
  });

  it('never attempts a delivery before it is due, whatever wakes its host', async () => {
    // Retry-After is honoured when longer than the schedule's 100 ms: the retry is due in 3 s.
    const receiver = await env.startReceiver((_req, i) =>
      i === 0 ? { status: 503, headers: { 'retry-after': '3' } } : { status: 200 },
    );
    const { api, calculator, webhook } = await setupWebhook(env.t, receiver.url);
    await submit(api, calculator.id);
    await waitFor(() => receiver.requests.length === 1, 5_000, 'the first attempt');
    const [{ id, next_attempt_at: due }] = await waitFor(
      async () => {
        const rows = (await env.t.dataSource.query(
          `SELECT id, next_attempt_at FROM deliveries WHERE webhook_id = $1 AND attempt_count = 1`,
          [webhook.id],
        )) as { id: string; next_attempt_at: Date }[];
        return rows.length === 1 ? rows : null;
      },
      5_000,
      'the recorded failure',
    );
    // Stray wakes, now and again: the claim refuses a delivery that is not due.
    const host = destinationOf(receiver.url);
    for (let i = 0; i < 5; i++) {
      await env.t.app.get(HostWakes).wake([{ host }]);
      await pause(100);
    }
    expect(due.getTime()).toBeGreaterThan(Date.now());
    expect(receiver.requests).toHaveLength(1);
    const delivery = await getDelivery(api, webhook.id, id);
    expect(delivery).toMatchObject({ status: 'pending', attemptCount: 1 });
  });

  it('logs the attempt of a worker that died mid-attempt once its lease has run out, then attempts it again', async () => {
    const receiver = await env.startReceiver();
    const { api, calculator, webhook } = await setupWebhook(env.t, receiver.url);
    const queue = env.t.app.get(HostWakes).queueOf(destinationOf(receiver.url));
    await queue.pause();
    let id: string;
    try {
      await submit(api, calculator.id);
      [{ id }] = await env.t.dataSource.query(`SELECT id FROM deliveries WHERE webhook_id = $1`, [webhook.id]);
      // What a killed worker leaves: a lease, already run out, and no attempt recorded.
      await env.t.dataSource.query(`UPDATE deliveries SET lease_until = now() - interval '1 second' WHERE id = $1`, [
        id,
      ]);
    } finally {
      await queue.resume();
    }
    await waitFor(() => receiver.requests.length === 1, 5_000, 'the attempt after the lease');
    const delivery = await waitFor(
      async () => {
        const [listed] = await listDeliveries(api, webhook.id);
        return listed.status === 'succeeded' ? getDelivery(api, webhook.id, id) : null;
      },
      5_000,
      'the delivery to succeed',
    );
    expect(delivery.attemptCount).toBe(2);
    expect(delivery.attempts.map((a) => [a.attemptNumber, a.succeeded, a.statusCode])).toEqual([
      [1, false, null],
      [2, true, 200],
    ]);
    expect(delivery.attempts[0].error).toMatch(/stopped before recording its outcome/);
  });

  it('misses no answer that comes while the drain looks at the mark: the next delivery goes at once', async () => {
    // One at a time (maxInFlight 1), answered after 150 ms; the drain looks at the mark after 100 ms and
    // that look is made to take 300 ms, so the answer comes during it. Nothing else would wake the drain.
    const receiver = await env.startReceiver(() => ({ status: 200, delayMs: 150 }));
    const { api, calculator, webhook } = await setupWebhook(env.t, receiver.url);
    expect((await api.patch(`/webhooks/${webhook.id}`, { maxInFlight: 1 })).status).toBe(200);
    const wakes = env.t.app.get(HostWakes);
    const queue = wakes.queueOf(destinationOf(receiver.url));
    const takeRewake = wakes.takeRewake.bind(wakes);
    wakes.takeRewake = async (host: string) => {
      await pause(300);
      return takeRewake(host);
    };
    await queue.pause();
    try {
      await submit(api, calculator.id);
      await submit(api, calculator.id);
      await queue.resume();
      await waitFor(() => receiver.requests.length === 2, 5_000, 'the second delivery');
    } finally {
      wakes.takeRewake = takeRewake;
      await queue.resume();
    }
  });

  it('keeps nothing in Redis per pending delivery: a host that is down with hundreds waiting has one wake', async () => {
    const receiver = await env.startReceiver(() => ({ status: 503, headers: { 'retry-after': '3600' } }));
    const { api, calculator, webhook } = await setupWebhook(env.t, receiver.url);
    const redis = new Redis(env.t.config.redisUrl);
    const prefix = QueueLayout.of(env.t.config).deliveryPrefix(0);
    const attempted = (n: number) =>
      waitFor(
        async () => {
          const [row] = await env.t.dataSource.query(
            `SELECT count(*)::int AS n FROM deliveries WHERE webhook_id = $1 AND attempt_count >= 1`,
            [webhook.id],
          );
          return row.n === n;
        },
        20_000,
        `${n} deliveries attempted once`,
      );
    const submitted = async (n: number) => {
      for (let i = 0; i < n / 10; i++) await Promise.all(Array.from({ length: 10 }, () => submit(api, calculator.id)));
    };
    const wakeOf = () => env.t.app.get(HostWakes).queues[0].getJobState(drainJobId(destinationOf(receiver.url)));
    // The scheduled work's runs come and go under the same prefix: only the delivery shard's keys count.
    const keys = async () => (await redis.keys(`${prefix}:*`)).filter((key) => !key.includes(':maintenance:'));
    try {
      await submitted(50);
      await attempted(50);
      await waitFor(async () => (await wakeOf()) === 'delayed', 5_000, 'the wake left for the retry');
      const before = (await keys()).length;
      await submitted(250);
      await attempted(300);
      await waitFor(async () => (await wakeOf()) === 'delayed', 5_000, 'the wake left for the retries');
      // Six times the backlog, and the same few keys (the host's wake and state, BullMQ's lists and streams,
      // some of which exist only while they hold something): none per delivery.
      const after = (await keys()).length;
      expect(after).toBeLessThanOrEqual(before + 4);
    } finally {
      redis.disconnect();
    }
  });
});

describe("the wake protocol's two orders (HostWakes, against a real Redis and BullMQ)", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ SWEEP_INTERVAL_MS: '3600000' });
  });
  afterAll(() => t.close());

  /** A stand-in drain, run by a BullMQ worker on the wakes' queue: `body` gets each run of the host's job. */
  async function drains(body: (job: Job<DrainJobData>, token: string | undefined, run: number) => Promise<string>) {
    const wakes = t.app.get(HostWakes);
    const runs: number[] = [];
    const worker = new Worker<DrainJobData>(
      DELIVERY_QUEUE,
      (job, token) => {
        runs.push(Date.now());
        return body(job, token, runs.length);
      },
      { connection: { url: t.config.redisUrl }, prefix: wakes.layout.deliveryPrefix(0) },
    );
    return { wakes, runs, close: () => worker.close() };
  }

  it('sees a delivery made due while the drain ran: its end takes the mark and wakes the host again', async () => {
    const host = 'made-due-while-running.example:443';
    let release!: () => void;
    const running = new Promise<void>((resolve) => (release = resolve));
    let started!: () => void;
    const began = new Promise<void>((resolve) => (started = resolve));
    const { wakes, runs, close } = await drains(async (job, token, run) => {
      if (run > 1) return 'again';
      await wakes.clearRewake(host);
      started();
      await running;
      // The drain's end: nothing due that it saw, so its job waits an hour; then it takes the mark.
      await job.moveToDelayed(Date.now() + 3_600_000, token);
      const mark = await wakes.takeRewake(host);
      if (mark) await wakes.wake([{ host, at: mark }]);
      throw new (await import('bullmq')).DelayedError();
    });
    try {
      await wakes.wake([{ host }]);
      await began;
      await wakes.wake([{ host }]); // made due now, while the drain runs: the job is active, so only marked
      release();
      await waitFor(() => runs.length === 2, 5_000, 'the second run');
    } finally {
      await close();
    }
  });

  it('moves a wake left for later to the sooner time of a delivery made due after the drain ended', async () => {
    const host = 'made-due-after.example:443';
    const { wakes, runs, close } = await drains(async (job, token, run) => {
      if (run > 1) return 'again';
      await wakes.clearRewake(host);
      await job.moveToDelayed(Date.now() + 3_600_000, token);
      const mark = await wakes.takeRewake(host);
      if (mark) await wakes.wake([{ host, at: mark }]);
      throw new (await import('bullmq')).DelayedError();
    });
    try {
      await wakes.wake([{ host }]);
      await waitFor(async () => (await wakes.queues[0].getJobState(drainJobId(host))) === 'delayed', 5_000, 'delayed');
      expect(runs).toHaveLength(1);
      await wakes.wake([{ host }]);
      await waitFor(() => runs.length === 2, 5_000, 'the second run');
    } finally {
      await close();
    }
  });

  it('leaves a wake that is sooner than asked as it is', async () => {
    const host = 'sooner.example:443';
    const wakes = t.app.get(HostWakes);
    const queue = wakes.queues[0];
    await wakes.wake([{ host, at: new Date(Date.now() + 60_000) }]);
    await wakes.wake([{ host, at: new Date(Date.now() + 600_000) }]);
    const job = await queue.getJob(drainJobId(host));
    expect(job?.delay).toBeGreaterThan(50_000);
    expect(job?.delay).toBeLessThanOrEqual(60_000);
    await queue.remove(drainJobId(host));
  });
});

describe('fairness at a shared host', () => {
  const env = useFastDeliveryApp({ DELIVERY_HOST_INITIAL_LIMIT: '2', DELIVERY_HOST_MAX_LIMIT: '2' });

  it("sends another workspace's delivery in turn behind one workspace's burst", async () => {
    const receiver = await env.startReceiver(() => ({ status: 200, delayMs: 50 }));
    const burst = await setupWebhook(env.t, receiver.url);
    const { workspace, key } = await createWorkspace(env.t, 'Other');
    const calculator = await createCalculator(env.t, workspace.id);
    const other = client(env.t, key);
    await registerWebhook(other, { url: receiver.url, calculators: [calculator.id] });
    await Promise.all(Array.from({ length: 40 }, (_, i) => submit(burst.api, burst.calculator.id, { data: { i } })));
    await submit(other, calculator.id, { data: { other: true } });
    const submittedAt = Date.now();
    await waitFor(() => receiver.requests.length === 41, 20_000, 'every delivery');
    const at = receiver.requests.findIndex((r) => JSON.parse(r.body).data.data.other === true);
    const burstBefore = receiver.requests.slice(0, at).filter((r) => r.receivedAt > submittedAt).length;
    // Two at a time at this host, taken in turn by workspace: once the other's delivery is due, the burst
    // gets about one more attempt per slot before it (one freed slot each), not the rest of its line.
    expect(at).toBeLessThan(40);
    expect(burstBefore).toBeLessThanOrEqual(3);
  });
});

/** What drains of one host did while `deliveries` (12 webhooks' worth) went out to a receiver answering in 1 s. */
async function drainOneHost(t: TestApp, deliveries: number) {
  // Slow answers, so deliveries pile up at the host whatever pace submissions come at.
  const receiver = await Receiver.start(() => ({ status: 200, delayMs: 1_000 }));
  try {
    const host = destinationOf(receiver.url);
    const apis = [];
    for (let w = 0; w < 2; w++) {
      const { workspace, key } = await createWorkspace(t, `Workspace ${w}`);
      const api = client(t, key);
      for (let h = 0; h < 6; h++) {
        const calculator = await createCalculator(t, workspace.id);
        await registerWebhook(api, { url: receiver.url, calculators: [calculator.id] });
        apis.push({ api, calculator });
      }
    }
    const drainers = new Set<string>();
    const lanes = new Set<number>();
    let mostHeld = 0; // lanes one worker kept at once
    let sampling = true;
    const queue = t.app.get(HostWakes).queueOf(host);
    const sampler = (async () => {
      while (sampling) {
        const held = new Map<string, number>();
        for (const job of await queue.getJobs(['active'])) {
          if (job.data.host !== host) continue;
          if (job.processedBy) drainers.add(job.processedBy);
          // A lane a worker passes on is active for a moment: held is what it kept.
          if (Date.now() - (job.processedOn ?? Date.now()) > 200) {
            held.set(job.processedBy ?? '', (held.get(job.processedBy ?? '') ?? 0) + 1);
          }
          lanes.add(job.data.lane ?? 0);
        }
        mostHeld = Math.max(mostHeld, ...held.values());
        await pause(50);
      }
    })();
    for (let i = 0; i < deliveries / apis.length; i++) {
      await Promise.all(apis.map(({ api, calculator }) => submit(api, calculator.id)));
    }
    await waitFor(() => receiver.requests.length >= deliveries, 30_000, 'every delivery');
    sampling = false;
    await sampler;
    await pause(300);
    expect(new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size).toBe(deliveries);
    expect(receiver.requests).toHaveLength(deliveries);
    return { drainers, lanes, mostHeld, maxOpen: receiver.maxOpen };
  } finally {
    await receiver.close();
  }
}

// A hundred sockets a worker: fifty is what one should hold of a host, so a limit of 120 calls for 3 lanes.
const BIG_HOST = {
  WORKER_CONCURRENCY: '100',
  DELIVERY_HOST_INITIAL_LIMIT: '120',
  DELIVERY_HOST_MAX_LIMIT: '120',
};

describe('a host whose limit is more than one worker should hold', () => {
  let t: TestApp;
  const workers: WorkerProcess[] = [];
  beforeAll(async () => {
    ensureBuilt();
    t = await createTestApp({ ...BIG_HOST, WORKER_ENABLED: 'false' });
    workers.push(spawnWorker(t.config, BIG_HOST), spawnWorker(t.config, BIG_HOST));
    // Both consuming before the host's wake exists: a worker still starting could take none of its lanes.
    for (const queue of t.app.get(HostWakes).queues) {
      await waitFor(async () => (await queue.getWorkers()).length >= 2, 30_000, 'both workers to consume');
    }
  }, 60_000);
  afterAll(async () => {
    for (const worker of workers) worker.child.kill('SIGTERM');
    await Promise.all(workers.map((w) => w.exited));
    await t.close();
  });

  it('is drained by several workers at once, in lanes by webhook, within one host limit', async () => {
    const { drainers, lanes, mostHeld, maxOpen } = await drainOneHost(t, 480);
    expect(drainers.size).toBe(2);
    // Three lanes' worth of limit, but one lane per worker consuming.
    expect([...lanes].sort()).toEqual([0, 1]);
    expect(mostHeld).toBe(1);
    expect(maxOpen).toBeLessThanOrEqual(120);
    expect(maxOpen).toBeGreaterThan(60); // more than one lane's part of it
  }, 60_000);

  it("sends a delivery made due while another lane's attempts are out at once, not at their answers", async () => {
    const receiver = await Receiver.start(() => ({ status: 200, delayMs: 3_000 }));
    try {
      const { workspace, key } = await createWorkspace(t, 'Lanes');
      const api = client(t, key);
      // The host's limit calls for its two lanes: a webhook of lane 1 (HOST_PICK's split by webhook id).
      let hook: { calculatorId: string } | undefined;
      while (!hook) {
        const calculator = await createCalculator(t, workspace.id);
        const webhook = await registerWebhook(api, { url: receiver.url, calculators: [calculator.id] });
        const [{ lane }] = (await t.dataSource.query(`SELECT mod(abs(hashtext($1)), 2) AS lane`, [webhook.id])) as {
          lane: number;
        }[];
        if (lane === 1) hook = { calculatorId: calculator.id };
      }
      await submit(api, hook.calculatorId);
      await waitFor(() => receiver.requests.length === 1, 5_000, 'the first attempt');
      await pause(300);
      const sent = Date.now();
      await submit(api, hook.calculatorId);
      await waitFor(() => receiver.requests.length === 2, 5_000, 'the second attempt');
      // Lane 0 takes the host's mark; lane 1 looks again itself while it has room.
      expect(receiver.requests[1].receivedAt - sent).toBeLessThan(1_000);
    } finally {
      await receiver.close();
    }
  }, 30_000);
});

describe('the same host with one worker', () => {
  // Its 1 s answers within the attempt timeout (FAST_DELIVERY's is 1 s).
  const env = useFastDeliveryApp({ ...BIG_HOST, DELIVERY_TIMEOUT_MS: '10000' });

  it('is drained in one lane: lanes only spread a host over workers', async () => {
    const { drainers, lanes, maxOpen } = await drainOneHost(env.t, 240);
    expect(drainers.size).toBe(1);
    expect([...lanes]).toEqual([0]);
    expect(maxOpen).toBeLessThanOrEqual(120);
  }, 60_000);
});
