import { freePort, createTestApp, type TestApp } from '../support/test-app.js';
import { Receiver, waitFor, type Behaviour, type ReceivedRequest } from '../support/receiver.js';
import { setupWebhook, submit } from '../support/delivery.js';
import { client, registerWebhook } from '../support/management-api.js';

// A host's adaptive limit (DESIGN 5, "Isolation and admission") against real local receivers: it grows
// for a host that answers 2xx at steady latency, is cut for one that answers 503 when overloaded, comes
// back to the initial limit for one that answers other errors promptly, and the per-webhook cap holds
// whatever the host's limit.

/** One workspace with `count` webhooks at `url`, all bound to one calculator: a submission makes one delivery each. */
async function webhooksAt(t: TestApp, url: string, count: number) {
  const first = await setupWebhook(t, url);
  const ids = [first.webhook.id as string];
  for (let i = 1; i < count; i++) {
    ids.push((await registerWebhook(first.api, { url, calculators: [first.calculator.id] })).id as string);
  }
  const submitMany = async (n: number) => {
    for (let i = 0; i < n; i++) await submit(first.api, first.calculator.id, { data: { i } });
  };
  return { ...first, ids, submitMany };
}

const statuses = async (t: TestApp, webhookIds: string[]) =>
  (
    (await t.dataSource.query(
      `SELECT status, count(*)::int AS n FROM deliveries WHERE webhook_id = ANY($1) GROUP BY 1`,
      [webhookIds],
    )) as { status: string; n: number }[]
  ).reduce<Record<string, number>>((all, { status, n }) => ({ ...all, [status]: n }), {});

/** Most requests of one webhook open at once at the receiver (the payload names the webhook). */
function maxOpenPerWebhook(requests: ReceivedRequest[]): number {
  const byWebhook = new Map<string, ReceivedRequest[]>();
  for (const r of requests) {
    const id = (JSON.parse(r.body) as { webhookId: string }).webhookId;
    byWebhook.set(id, [...(byWebhook.get(id) ?? []), r]);
  }
  let most = 0;
  for (const list of byWebhook.values()) {
    const events = list.flatMap((r) => [
      { at: r.receivedAt, step: 1 },
      { at: r.answeredAt ?? Infinity, step: -1 },
    ]);
    // An answer and the next request in the same ms: the answer first.
    events.sort((a, b) => a.at - b.at || a.step - b.step);
    let open = 0;
    for (const { step } of events) most = Math.max(most, (open += step));
  }
  return most;
}

function useApp(env: Record<string, string>) {
  const ctx = { t: undefined as unknown as TestApp, receivers: [] as Receiver[], metricsUrl: '' };
  const start = async (behaviour?: Behaviour) => {
    const receiver = await Receiver.start(behaviour);
    ctx.receivers.push(receiver);
    return receiver;
  };
  beforeAll(async () => {
    const metricsPort = await freePort();
    ctx.metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    ctx.t = await createTestApp({
      WORKER_ENABLED: 'true',
      SWEEP_INTERVAL_MS: '1000',
      METRICS_PORT: String(metricsPort),
      ...env,
    });
  });
  afterEach(async () => {
    await Promise.all(ctx.receivers.splice(0).map((r) => r.close()));
  });
  afterAll(() => ctx.t.close());
  return { ctx, start };
}

describe('a host that answers 2xx at a steady 250 ms', () => {
  const { ctx, start } = useApp({});

  it('gets more than the initial 20 requests open at once: its limit grew, shown in health and /metrics', async () => {
    const receiver = await start(() => ({ status: 200, delayMs: 250 }));
    const hooks = await webhooksAt(ctx.t, receiver.url, 20);
    await hooks.submitMany(40);
    await waitFor(() => receiver.maxOpen > 20, 30_000, 'more than 20 requests open at the host');
    const health = (await client(ctx.t, hooks.key).get(`/webhooks/${hooks.ids[0]}/health`)).body.data;
    expect(health.host.limit).toBeGreaterThan(20);
    expect(health.host.lastChange).toMatchObject({ reason: 'growth' });
    expect(Number.isNaN(Date.parse(health.host.lastChange.at))).toBe(false);
    const host = new URL(receiver.url).host;
    const metrics = await (await fetch(ctx.metricsUrl)).text();
    const limit = new RegExp(`^webhook_host_concurrency_limit\\{host="${host}"\\} (\\d+)$`, 'm').exec(metrics);
    expect(Number(limit?.[1])).toBeGreaterThan(20);
    expect(metrics).toMatch(new RegExp(`^webhook_host_in_flight\\{host="${host}"\\} \\d+$`, 'm'));
    expect(metrics).toMatch(
      new RegExp(`^webhook_host_limit_last_change_timestamp_seconds\\{host="${host}",reason="\\w+"\\} [\\d.e+]+$`, 'm'),
    );
    await waitFor(async () => (await statuses(ctx.t, hooks.ids)).succeeded === 800, 60_000, 'every delivery');
  }, 120_000);
});

describe('a host that answers 503 whenever more than 10 requests are open', () => {
  const N = 10;
  const { ctx, start } = useApp({ DELIVERY_RETRY_SCHEDULE: Array(20).fill('200ms').join(',') });

  it('sees its open requests held near 10 (the limit was cut), and every delivery ends succeeded', async () => {
    const receiver = await start(() => ({ status: receiver.open > N ? 503 : 200, delayMs: 100 }));
    const hooks = await webhooksAt(ctx.t, receiver.url, 5);
    await hooks.submitMany(60);
    await waitFor(async () => (await statuses(ctx.t, hooks.ids)).succeeded === 300, 90_000, 'every delivery');
    expect(await statuses(ctx.t, hooks.ids)).toEqual({ succeeded: 300 });
    // Past the start (20 at once, the initial limit, then the cut and the retries of what it refused: the
    // first hundred or so), few requests find more than N open.
    const later = receiver.requests.slice(100);
    const over = later.filter((r) => r.openAtArrival > N).length;
    expect(over / later.length).toBeLessThan(0.1);
    const health = (await client(ctx.t, hooks.key).get(`/webhooks/${hooks.ids[0]}/health`)).body.data;
    expect(health.host.limit).toBeLessThanOrEqual(2 * N);
  }, 120_000);
});

describe('a host cut once, that answers 500 at a steady 100 ms from then on', () => {
  const { ctx, start } = useApp({ DELIVERY_RETRY_SCHEDULE: '100ms,100ms' });

  it('gets its limit back to the initial 20 on those answers, and no further without a 2xx', async () => {
    // The first requests overload it (503): the limit is cut; then it rejects everything, promptly.
    const receiver = await start((_request, index) => (index < 10 ? { status: 503 } : { status: 500, delayMs: 100 }));
    const hooks = await webhooksAt(ctx.t, receiver.url, 20);
    // From /metrics, which no rate limit bounds, as the polls below are many.
    const pattern = new RegExp(
      `^webhook_host_concurrency_limit\\{host="${new URL(receiver.url).host}"\\} (\\d+)$`,
      'm',
    );
    const hostLimit = async () => Number(pattern.exec(await (await fetch(ctx.metricsUrl)).text())?.[1]);
    // Watched from the first submission: the limit is back to 20 within a couple of seconds of the cut.
    const cut = waitFor(async () => (await hostLimit()) < 20, 10_000, 'the limit to be cut');
    cut.catch(() => undefined); // awaited below, after the submissions
    await hooks.submitMany(20);
    await cut;
    await waitFor(async () => (await hostLimit()) === 20, 30_000, 'the limit to grow back to 20');
    await waitFor(async () => (await statuses(ctx.t, hooks.ids)).failed === 400, 60_000, 'every delivery to fail');
    expect(await hostLimit()).toBe(20);
    const health = (await client(ctx.t, hooks.key).get(`/webhooks/${hooks.ids[0]}/health`)).body.data;
    expect(health.host).toMatchObject({ limit: 20, lastChange: { reason: 'growth' } });
    expect(receiver.maxOpen).toBeLessThanOrEqual(20);
  }, 120_000);
});

describe('a host where some webhooks answer 400 at once and the others 200 after 300 ms', () => {
  const { ctx, start } = useApp({ DELIVERY_RETRY_SCHEDULE: '100ms' });

  it("grows on the 200s' steady latency: the fast 400s do not make it look like queueing", async () => {
    const rejected = new Set<string>();
    const receiver = await start((request) =>
      rejected.has((JSON.parse(request.body) as { webhookId: string }).webhookId)
        ? { status: 400 }
        : { status: 200, delayMs: 300 },
    );
    const hooks = await webhooksAt(ctx.t, receiver.url, 20);
    for (const id of hooks.ids.slice(0, 10)) rejected.add(id);
    // Every reason the host's limit changed for while the deliveries went, read from /metrics.
    const changed = new RegExp(
      `^webhook_host_limit_last_change_timestamp_seconds\\{host="${new URL(receiver.url).host}",reason="(\\w+)"\\}`,
      'm',
    );
    const reasons = new Set<string>();
    await hooks.submitMany(30);
    await waitFor(
      async () => {
        const reason = changed.exec(await (await fetch(ctx.metricsUrl)).text())?.[1];
        if (reason) reasons.add(reason);
        return (await statuses(ctx.t, hooks.ids)).pending === undefined;
      },
      60_000,
      'every delivery',
    );
    expect(await statuses(ctx.t, hooks.ids)).toEqual({ succeeded: 300, failed: 300 });
    expect([...reasons]).toEqual(['growth']);
    // The 200s' webhooks alone could hold 10 x 20 open: the limit grew past its initial 20.
    expect(receiver.maxOpen).toBeGreaterThan(20);
    const health = (await client(ctx.t, hooks.key).get(`/webhooks/${hooks.ids[10]}/health`)).body.data;
    expect(health.host.limit).toBeGreaterThan(20);
    expect(health.host.lastChange.reason).not.toBe('latency');
  }, 120_000);
});

describe('the per-webhook cap', () => {
  const { ctx, start } = useApp({ DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: '3' });

  it('holds at most the cap open for one webhook, while another webhook at the host goes beside it', async () => {
    const receiver = await start(() => ({ status: 200, delayMs: 150 }));
    const hooks = await webhooksAt(ctx.t, receiver.url, 2);
    await hooks.submitMany(15);
    await waitFor(async () => (await statuses(ctx.t, hooks.ids)).succeeded === 30, 30_000, 'every delivery');
    expect(maxOpenPerWebhook(receiver.requests)).toBe(3);
    expect(receiver.maxOpen).toBeGreaterThan(3);
  }, 60_000);
});
