import { expectNothingFor, Receiver, waitFor, type Behaviour } from '../support/receiver.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

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
    // Drains pick none of a workspace at its share: a seventh request would show.
    await expectNothingFor(500, 'request beyond the workspace share', () => dead.requests.length > 6);
    expect(dead.requests).toHaveLength(6); // all but a quarter of 8 sockets
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

describe('deliveries waiting for a host slot', () => {
  const { ctx, start } = useApp({ WORKER_CONCURRENCY: '8', DELIVERY_HOST_MAX_LIMIT: '1' });

  it('are attempted as the slot frees, not after a polling interval', async () => {
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
