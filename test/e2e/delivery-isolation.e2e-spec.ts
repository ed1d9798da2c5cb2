import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../src/core/config/config.js';
import { RedisClients } from '../../src/core/redis/redis.module.js';
import { DestinationLimiter, type HostSignal } from '../../src/delivery/engine/destination-limiter.js';
import { HostStates } from '../../src/delivery/host-state.js';
import { expectNothingFor, Receiver, waitFor, type Behaviour } from '../support/receiver.js';
import { createCalculator, createTestApp, createWorkspace, TEST_REDIS_URL, type TestApp } from '../support/test-app.js';

/** A workspace with one webhook to `url` on a calculator of its own; `submit(n)` posts n submissions. */
async function webhookTo(t: TestApp, url: string) {
  const { workspace, key } = await createWorkspace(t);
  const calc = await createCalculator(t, workspace.id);
  const api = t.http();
  const hook = await api
    .post('/api/v1/webhooks')
    .set('x-ac-api-key', key)
    .send({ url, calculators: [calc.id] })
    .expect(200);
  const submit = async (n: number) => {
    for (let i = 0; i < n; i++) {
      await t
        .http()
        .post(`/api/v1/calculators/${calc.id}/submissions`)
        .set('x-ac-api-key', key)
        .send({ data: { i } })
        .expect(200);
    }
  };
  const remove = () => t.http().delete(`/api/v1/webhooks/${hook.body.data.id}`).set('x-ac-api-key', key);
  return { webhookId: hook.body.data.id as string, submit, remove };
}

const attemptsOf = async (t: TestApp, webhookId: string) =>
  (
    (await t.dataSource.query(
      `SELECT status, attempt_count FROM deliveries WHERE webhook_id = $1 ORDER BY created_at, id`,
      [webhookId],
    )) as { status: string; attempt_count: number }[]
  ).map((d) => [d.status, d.attempt_count]);

function useApp(env: Record<string, string>) {
  const ctx = { t: undefined as unknown as TestApp, receivers: [] as Receiver[] };
  const start = async (behaviour?: Behaviour) => {
    const receiver = await Receiver.start(behaviour);
    ctx.receivers.push(receiver);
    return receiver;
  };
  beforeAll(async () => {
    ctx.t = await createTestApp({ WORKER_ENABLED: 'true', SWEEP_INTERVAL_MS: '200', ...env });
  });
  afterEach(async () => {
    await Promise.all(ctx.receivers.splice(0).map((r) => r.close()));
  });
  afterAll(() => ctx.t.close());
  return { ctx, start };
}

describe('DELETE while attempts hang on receivers that never answer', () => {
  const { ctx, start } = useApp({ WORKER_CONCURRENCY: '20', DELIVERY_TIMEOUT_MS: '6000' });

  it('answers without waiting for the receivers, and the hanging attempts are recorded, not retried', async () => {
    const dead = await start(() => ({ hang: true }));
    const hooks = await Promise.all(Array.from({ length: 5 }, () => webhookTo(ctx.t, dead.url)));
    for (const hook of hooks) await hook.submit(1);
    await waitFor(() => dead.requests.length === 5, 5_000, 'five hanging attempts');
    for (const hook of hooks) {
      const started = Date.now();
      await hook.remove().expect(200);
      // Waiting for the receiver would take the 6 s attempt timeout.
      expect(Date.now() - started).toBeLessThan(2_000);
    }
    const recorded = async () =>
      Number(
        (
          await ctx.t.dataSource.query(
            `SELECT count(*) AS n FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
             WHERE d.webhook_id = ANY($1)`,
            [hooks.map((h) => h.webhookId)],
          )
        )[0].n,
      );
    await waitFor(async () => (await recorded()) === 5, 15_000, 'the five attempts to time out and be recorded');
    for (const hook of hooks) expect(await attemptsOf(ctx.t, hook.webhookId)).toEqual([['cancelled', 1]]);
    expect(dead.requests).toHaveLength(5);
  }, 30_000);
});

describe('a workspace whose receivers hang', () => {
  // No per-webhook cap, a host limit far above the worker's slots and no breaker here: only the
  // workspace share protects the others.
  const { ctx, start } = useApp({
    WORKER_CONCURRENCY: '8',
    DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: '0',
    DELIVERY_HOST_INITIAL_LIMIT: '1000',
    DELIVERY_BREAKER_THRESHOLD: '0',
    DELIVERY_TIMEOUT_MS: '8000',
  });

  it('holds at most its share of the worker, so another workspace is delivered at once', async () => {
    const dead = await start(() => ({ hang: true }));
    const healthy = await start();
    const busy = await webhookTo(ctx.t, dead.url);
    const other = await webhookTo(ctx.t, healthy.url);
    await busy.submit(12);
    await waitFor(() => dead.requests.length >= 6, 5_000, 'the busy workspace to fill its share');
    // A job over the share waits 100 ms in process for a slot before it parks: a seventh request would show.
    await expectNothingFor(500, 'request beyond the workspace share', () => dead.requests.length > 6);
    expect(dead.requests).toHaveLength(6); // all but a quarter of 8 slots
    const sent = Date.now();
    await other.submit(1);
    await waitFor(() => healthy.requests.length === 1, 2_000, 'the other workspace');
    expect(healthy.requests[0].receivedAt - sent).toBeLessThan(2_000);
    await busy.remove().expect(200);
  }, 30_000);
});

describe('a destination that keeps timing out', () => {
  const { ctx, start } = useApp({
    WORKER_CONCURRENCY: '8',
    DELIVERY_TIMEOUT_MS: '300',
    DELIVERY_BREAKER_THRESHOLD: '2',
    DELIVERY_BREAKER_COOLDOWN_MS: '1500',
    DELIVERY_RETRY_SCHEDULE: '100ms,100ms,100ms,100ms,100ms,100ms,100ms,100ms',
  });

  it('is paused, then probed by one attempt; waiting spends no attempt; it resumes once it answers', async () => {
    let answering = false;
    const receiver = await start(() => (answering ? { status: 200 } : { hang: true }));
    const hook = await webhookTo(ctx.t, receiver.url);
    await Promise.all(Array.from({ length: 6 }, () => hook.submit(1)));
    await waitFor(() => receiver.requests.length >= 2, 5_000, 'the attempts that open the breaker');
    // Without the breaker, six deliveries retried every ~400 ms would make ~40 requests in 3 s; with it,
    // at most the six first attempts and two probes.
    await expectNothingFor(3_000, 'request beyond six attempts and two probes', () => receiver.requests.length > 8);
    expect(receiver.requests.length).toBeLessThanOrEqual(8);
    const spent = (await attemptsOf(ctx.t, hook.webhookId)).reduce((n, [, count]) => n + Number(count), 0);
    expect(spent).toBeLessThanOrEqual(8);
    answering = true;
    // The next probe succeeds, the breaker closes and wakes the waiting deliveries.
    await waitFor(
      async () => (await attemptsOf(ctx.t, hook.webhookId)).every(([status]) => status === 'succeeded'),
      10_000,
      'every delivery to succeed',
    );
  }, 30_000);
});

describe('jobs waiting for a host slot', () => {
  const { ctx, start } = useApp({ WORKER_CONCURRENCY: '8', DELIVERY_HOST_MAX_LIMIT: '1' });

  it('are woken as the slot frees, not after a polling interval', async () => {
    const receiver = await start(() => ({ status: 200, delayMs: 150 }));
    const hook = await webhookTo(ctx.t, receiver.url);
    await hook.submit(8);
    await waitFor(() => receiver.requests.length === 8, 10_000, 'eight deliveries through one slot');
    const times = receiver.requests.map((r) => r.receivedAt);
    const gaps = times.slice(1).map((at, i) => at - times[i]);
    // Each waits for the one before it (150 ms); a poll that doubles up to 5 s would leave gaps of seconds.
    expect(Math.max(...gaps)).toBeLessThan(1_000);
  }, 30_000);
});

describe('DestinationLimiter slots', () => {
  const config = loadConfig({
    NODE_ENV: 'test',
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: `cw_test_${randomBytes(6).toString('hex')}`,
    DELIVERY_HOST_MAX_LIMIT: '1',
  });
  const redis = new RedisClients(config);
  const limiter = new DestinationLimiter(config, redis);
  afterAll(() => redis.onApplicationShutdown());
  const acquire = (host: string, holder: string, jobId: string) => limiter.acquire(host, holder, jobId, 'webhook');
  const release = (host: string, holder: string, signal: HostSignal = 'other') =>
    limiter.release(host, holder, 'webhook', { signal, latencyMs: 10, admittedAt: Date.now() });

  it('belong to one attempt: another lock token of the same delivery neither takes nor frees it', async () => {
    expect(await acquire('host:1', 'delivery-a:token-1', 'job-a')).toEqual({ admitted: true });
    // The same delivery run again under a new lock (its first run lost the lock) waits its turn.
    expect(await acquire('host:1', 'delivery-a:token-2', 'job-a-again')).toEqual({
      admitted: false,
      until: null,
    });
    expect(await release('host:1', 'delivery-a:token-2')).toEqual([]);
    expect((await acquire('host:1', 'delivery-b:token-3', 'job-b')).admitted).toBe(false);
    // The holder's release frees the slot and wakes the first job that waited.
    expect(await release('host:1', 'delivery-a:token-1')).toEqual(['job-a-again']);
    expect(await acquire('host:1', 'delivery-a:token-2', 'job-a-again')).toEqual({ admitted: true });
  });

  it('taken and freed by attempts that come together (one script run) keep the limit and wake in order', async () => {
    const tries = await Promise.all([
      acquire('host:2', 'delivery-c:token', 'job-c'),
      acquire('host:2', 'delivery-d:token', 'job-d'),
      acquire('host:3', 'delivery-e:token', 'job-e'),
      acquire('host:2', 'delivery-f:token', 'job-f'),
    ]);
    expect(tries).toEqual([
      { admitted: true },
      { admitted: false, until: null },
      { admitted: true },
      { admitted: false, until: null },
    ]);
    const woken = await Promise.all([
      release('host:3', 'delivery-e:token'),
      release('host:2', 'delivery-c:token'),
      release('host:2', 'delivery-x:stale'),
    ]);
    expect(woken).toEqual([[], ['job-d'], []]);
    // job-d's turn: it takes the slot job-c freed; job-f still waits.
    expect(await acquire('host:2', 'delivery-d:token', 'job-d')).toEqual({ admitted: true });
    expect(await release('host:2', 'delivery-d:token')).toEqual(['job-f']);
  });

  it('fed by attempts that end together, the breaker takes their signals in order', async () => {
    // Timeouts four at a time, an answer between (at most two script runs): each answer reset the count.
    const four = Array<HostSignal>(4).fill('timeout');
    const signals: HostSignal[] = [...four, 'answered', ...four, 'ok', ...four];
    await Promise.all(signals.map((signal, i) => release('host:4', `delivery-${i}:token`, signal)));
    expect(await acquire('host:4', 'delivery-p:token', 'job-p')).toEqual({ admitted: true });
    // The fifth timeout in a row (with an attempt that showed nothing beside it) opens it for the cooldown.
    const before = Date.now();
    await Promise.all([
      release('host:4', 'delivery-p:token', 'other'),
      release('host:4', 'delivery-q:token', 'timeout'),
    ]);
    const paused = await acquire('host:4', 'delivery-r:token', 'job-r');
    expect(paused.admitted).toBe(false);
    expect(!paused.admitted && paused.until).toBeGreaterThanOrEqual(before + config.breaker.cooldownMs);
    // An answer (a probe's) closes it again.
    await release('host:4', 'delivery-s:token', '503');
    expect(await acquire('host:4', 'delivery-r:token', 'job-r')).toEqual({ admitted: true });
  });
});

describe('DestinationLimiter limits', () => {
  const config = loadConfig({
    NODE_ENV: 'test',
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: `cw_test_${randomBytes(6).toString('hex')}`,
    DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: '2',
    DELIVERY_HOST_INITIAL_LIMIT: '8',
    DELIVERY_BREAKER_THRESHOLD: '2',
  });
  const redis = new RedisClients(config);
  const limiter = new DestinationLimiter(config, redis);
  const states = new HostStates(config, redis);
  afterAll(() => redis.onApplicationShutdown());

  it('hold a webhook at its cap, and hand a freed slot to the first waiter whose webhook has room', async () => {
    const tries = await Promise.all([
      limiter.acquire('host:5', 'a1:t', 'job-a1', 'hook-a'),
      limiter.acquire('host:5', 'a2:t', 'job-a2', 'hook-a'),
      limiter.acquire('host:5', 'a3:t', 'job-a3', 'hook-a'),
      limiter.acquire('host:5', 'b1:t', 'job-b1', 'hook-b'),
    ]);
    expect(tries.map((t) => t.admitted)).toEqual([true, true, false, true]);
    expect(await states.get('host:5')).toEqual({ host: 'host:5', limit: 8, inFlight: 3, lastChange: null });
    // b's release frees a host slot, but a is at its cap: nobody is woken.
    expect(await limiter.release('host:5', 'b1:t', 'hook-b')).toEqual([]);
    expect(await limiter.hasRoom('host:5', 'hook-a')).toBe(false);
    expect(await limiter.release('host:5', 'a1:t', 'hook-a')).toEqual(['job-a3']);
    expect(await limiter.hasRoom('host:5', 'hook-a')).toBe(true);
  });

  it('are cut at once by a 503 of an attempt admitted after the last cut, not by the ones before', async () => {
    const admittedAt = Date.now() - 1_000; // before the cut below, whatever the clock's resolution
    const holders = ['x1:t', 'x2:t', 'x3:t', 'x4:t'];
    for (const [i, holder] of holders.entries()) await limiter.acquire('host:6', holder, `job-${i}`, `hook-${i}`);
    await limiter.release('host:6', 'x1:t', 'hook-0', { signal: '503', latencyMs: 5, admittedAt });
    const cut = await states.get('host:6');
    expect(cut).toMatchObject({ limit: 4, inFlight: 3, lastChange: { reason: '503' } });
    // Attempts admitted before the cut say nothing of the new limit.
    await limiter.release('host:6', 'x2:t', 'hook-1', { signal: '503', latencyMs: 5, admittedAt });
    expect(await states.get('host:6')).toMatchObject({ limit: 4, inFlight: 2 });
    await limiter.release('host:6', 'x3:t', 'hook-2', { signal: 'timeout', latencyMs: 5, admittedAt: Date.now() + 1 });
    expect(await states.get('host:6')).toMatchObject({ limit: 2, inFlight: 1, lastChange: { reason: 'timeout' } });
  });

  it('go to the minimum when the breaker opens: its two ends', async () => {
    for (const i of [1, 2]) await limiter.acquire('host:7', `y${i}:t`, `job-y${i}`, 'hook-y');
    const future = Date.now() + 60_000; // admitted "after" any cut: each timeout may cut
    await limiter.release('host:7', 'y1:t', 'hook-y', { signal: 'timeout', latencyMs: 5, admittedAt: future });
    expect(await states.get('host:7')).toMatchObject({ limit: 4, lastChange: { reason: 'timeout' } });
    await limiter.release('host:7', 'y2:t', 'hook-y', { signal: 'timeout', latencyMs: 5, admittedAt: future });
    expect(await states.get('host:7')).toMatchObject({ limit: 1, inFlight: 0, lastChange: { reason: 'paused' } });
  });
});
