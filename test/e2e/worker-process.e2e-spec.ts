import { execFileSync } from 'node:child_process';
import { Receiver, waitFor } from '../support/receiver.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';
import { ensureBuilt, spawnWorker, type WorkerProcess } from '../support/worker-process.js';

const FAST_WORKER_ENV = {
  WORKER_CONCURRENCY: '5',
  DELIVERY_TIMEOUT_MS: '5000',
  DELIVERY_RETRY_SCHEDULE: '200ms,200ms,200ms',
  DELIVERY_LOCK_MS: '2000',
  SWEEP_INTERVAL_MS: '500',
};

describe('worker process (dist/worker.js)', () => {
  let t: TestApp;
  let receiver: Receiver;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    ensureBuilt();
    // The api runs with its in-process worker off: only spawned worker processes deliver.
    t = await createTestApp({ WORKER_ENABLED: 'false' });
  }, 120_000);
  afterEach(async () => {
    for (const w of workers.splice(0)) {
      if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
      await w.exited;
    }
    await receiver?.close();
  });
  afterAll(() => t.close());

  async function setup(hooks: number) {
    const { workspace, key } = await createWorkspace(t);
    const calc = await createCalculator(t, workspace.id);
    for (let i = 0; i < hooks; i++) {
      await t
        .http()
        .post('/api/v1/webhooks')
        .set('x-ac-api-key', key)
        .send({ url: receiver.url, calculators: [calc.id], name: `hook ${i}` })
        .expect(200);
    }
    const submit = (n: number) =>
      t
        .http()
        .post(`/api/v1/calculators/${calc.id}/submissions`)
        .set('x-ac-api-key', key)
        .send({ data: { n } })
        .expect(200);
    return { workspace, submit };
  }

  const deliveryStates = async (workspaceId: string) =>
    (await t.dataSource.query(`SELECT id, status FROM deliveries WHERE workspace_id = $1`, [workspaceId])) as {
      id: string;
      status: string;
    }[];

  it('loads none of the HTTP API: no controllers, Swagger, Express, health checks or dashboard', () => {
    // Each costs the worker heap (marked by every major GC) and RSS: 19 MB of RSS together when measured.
    const script = `
      import { registerHooks } from 'node:module';
      const loaded = [];
      registerHooks({ load: (url, context, next) => (loaded.push(url), next(url, context)) });
      await import(${JSON.stringify(new URL('../../dist/worker.module.js', import.meta.url).href)});
      process.stdout.write(JSON.stringify(loaded));`;
    const loaded = JSON.parse(
      execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }),
    ) as string[];
    expect(loaded).toContainEqual(expect.stringMatching(/\/dist\/delivery\/engine\/delivery\.worker\.js$/));
    const api =
      /\/node_modules\/(@nestjs\/(swagger|platform-express|terminus)|express|@bull-board\/[^/]+)\/|\/dist\/.*\.controller\.js$/;
    expect(loaded.filter((url) => api.test(url))).toEqual([]);
  });

  it('loses nothing when a worker is killed with SIGKILL mid-batch and another starts', async () => {
    receiver = await Receiver.start(() => ({ status: 200, delayMs: 150 }));
    const { workspace, submit } = await setup(2);
    for (let n = 0; n < 40; n++) await submit(n);
    const first = spawnWorker(t.config, FAST_WORKER_ENV);
    workers.push(first);
    await waitFor(() => receiver.requests.length >= 10, 30_000, 'the first worker to be mid-batch');
    first.child.kill('SIGKILL');
    await first.exited;
    const beforeRestart = await deliveryStates(workspace.id);
    expect(beforeRestart).toHaveLength(80);
    expect(beforeRestart.filter((d) => d.status === 'pending').length).toBeGreaterThan(0);

    workers.push(spawnWorker(t.config, FAST_WORKER_ENV));
    const final = await waitFor(
      async () => {
        const states = await deliveryStates(workspace.id);
        return states.every((d) => d.status === 'succeeded') ? states : null;
      },
      60_000,
      'every delivery to succeed after the restart',
    );
    const received = new Set(receiver.requests.map((r) => r.headers['webhook-id']));
    for (const d of final) expect(received.has(d.id)).toBe(true);
    // At-least-once: a duplicate can only be an attempt the killed worker had in flight (5 sockets) or had
    // answered and not yet recorded (records go to Postgres in batches, every 20 ms at most).
    expect(receiver.requests.length - received.size).toBeLessThanOrEqual(10);
  }, 120_000);

  it('on SIGTERM finishes attempts in flight, starts no new ones, and exits 0', async () => {
    receiver = await Receiver.start(() => ({ status: 200, delayMs: 1500 }));
    const { workspace, submit } = await setup(1);
    for (let n = 0; n < 6; n++) await submit(n);
    const worker = spawnWorker(t.config, { ...FAST_WORKER_ENV, WORKER_CONCURRENCY: '2' });
    workers.push(worker);
    await waitFor(() => receiver.requests.length === 2, 30_000, 'two attempts in flight');
    worker.child.kill('SIGTERM');
    const exit = await worker.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(receiver.requests).toHaveLength(2);
    const states = await deliveryStates(workspace.id);
    const inFlight = new Set(receiver.requests.map((r) => r.headers['webhook-id']));
    for (const d of states) expect(d.status).toBe(inFlight.has(d.id) ? 'succeeded' : 'pending');
  }, 60_000);
});
