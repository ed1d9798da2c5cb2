import { AttemptRecords, type AttemptRecord } from '../../src/delivery/store/attempt-records.js';
import { destinationOf, HostWakes } from '../../src/delivery/host-wakes.js';
import type { WebhookHealth } from '../../src/webhooks/webhook.serializer.js';
import {
  expectNoFurtherRequests,
  getDelivery,
  listDeliveries,
  setupWebhook,
  submit,
  useFastDeliveryApp,
} from '../support/delivery.js';
import { snapshotDatabase } from '../support/hostile-input.js';
import {
  client,
  expectBadRequest,
  expectJson,
  expectNotFound,
  expectTimestamp,
  keysOf,
  removeWebhook,
  type Client,
} from '../support/management-api.js';
import { pace, untilClock, waitFor, type Behaviour } from '../support/receiver.js';
import { createWorkspace, type TestApp } from '../support/test-app.js';

const HEALTH_KEYS = [
  'consecutiveFailures',
  'disabledAt',
  'disabledReason',
  'host',
  'lastAttemptAt',
  'lastError',
  'lastSuccessAt',
  'pendingDeliveries',
  'state',
  'webhookId',
];

/** When the host's next pending delivery falls due, as its drain reads it (null: nothing pending there). */
async function nextDue(t: TestApp, host: string): Promise<Date | null> {
  const [{ at }] = await t.dataSource.query('SELECT host_next_due($1) AS at', [host]);
  return at;
}

/** The hosts the deliveries wait at, in the order of `ids` (null: none, they cannot be pending). */
async function hostsOf(t: TestApp, ids: string[]): Promise<(string | null)[]> {
  const rows: { id: string; host: string | null }[] = await t.dataSource.query(
    'SELECT id, host FROM deliveries WHERE id = ANY($1)',
    [ids],
  );
  return ids.map((id) => rows.find((r) => r.id === id)!.host);
}

async function healthOf(api: Client, webhookId: string, action?: 'disable' | 'enable'): Promise<WebhookHealth> {
  const res = action
    ? await api.post(`/webhooks/${webhookId}/${action}`)
    : await api.get(`/webhooks/${webhookId}/health`);
  expectJson(res, 200);
  expect(keysOf(res.body)).toEqual(['data']);
  expect(keysOf(res.body.data)).toEqual(HEALTH_KEYS);
  return res.body.data as WebhookHealth;
}

describe('webhook health and pause, fast retries (3 attempts), disabled after 3 failures over 1.5 s', () => {
  const lines: string[] = [];
  const env = useFastDeliveryApp(
    { WEBHOOK_DISABLE_MIN_FAILURES: '3', WEBHOOK_DISABLE_AFTER: '1500ms', METRICS_PORT: 'free', LOG_LEVEL: 'warn' },
    lines,
  );

  const disabledMetric = async (reason: string) => {
    const res = await fetch(env.metricsUrl);
    expect(res.status).toBe(200);
    const text = await res.text();
    const match = new RegExp(`^webhooks_disabled_automatically_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(text);
    return match ? Number(match[1]) : 0;
  };
  const disabledLine = (webhookId: string) =>
    lines.map((raw) => ({ ...JSON.parse(raw), raw })).find((l) => l.webhookId === webhookId && l.reason);
  const deliveriesOf = async (api: Client, webhookId: string, count: number, what: string) =>
    waitFor(
      async () => {
        const list = await listDeliveries(api, webhookId);
        return list.length === count && list.every((d) => d.status !== 'pending') ? list : null;
      },
      10_000,
      what,
    );

  describe('GET /webhooks/{id}/health', () => {
    it('shows a new webhook active, with no attempts and nothing pending', async () => {
      const { api, webhook } = await setupWebhook(env.t, 'https://example.com/never-sent');
      expect(await healthOf(api, webhook.id)).toEqual({
        webhookId: webhook.id,
        state: 'active',
        disabledAt: null,
        disabledReason: null,
        consecutiveFailures: 0,
        lastAttemptAt: null,
        lastSuccessAt: null,
        lastError: null,
        pendingDeliveries: 0,
        // Nothing was sent to its host: its limit is where every host's starts.
        host: { limit: 20, inFlight: 0, lastChange: null },
      });
    });

    it("is a 404 for another workspace's webhook, a removed one and an unknown id", async () => {
      const { webhook } = await setupWebhook(env.t, 'https://example.com/other');
      const { key } = await createWorkspace(env.t);
      const stranger = client(env.t, key);
      const mine = await setupWebhook(env.t, 'https://example.com/mine');
      await removeWebhook(mine.api, mine.webhook.id);
      for (const [api, id] of [
        [stranger, webhook.id],
        [mine.api, mine.webhook.id],
        [mine.api, 'nosuchwebhook0000000000000'],
      ] as const) {
        expectNotFound(await api.get(`/webhooks/${id}/health`));
        expectNotFound(await api.post(`/webhooks/${id}/disable`));
        expectNotFound(await api.post(`/webhooks/${id}/enable`));
      }
    });
  });

  describe('POST /webhooks/{id}/disable and /enable', () => {
    it('sends nothing while disabled: new deliveries are recorded skipped, at no host; enable sends again', async () => {
      const receiver = await env.startReceiver();
      const { api, webhook, calculator } = await setupWebhook(env.t, receiver.url);
      const before = (await api.get(`/webhooks/${webhook.id}`)).text;
      const listed = (await api.get('/webhooks')).text;

      const disabled = await healthOf(api, webhook.id, 'disable');
      expect(disabled).toMatchObject({ state: 'disabled', disabledReason: 'manual', pendingDeliveries: 0 });
      expectTimestamp(disabled.disabledAt);
      // On a disabled webhook it changes nothing.
      expect(await healthOf(api, webhook.id, 'disable')).toEqual(disabled);

      await submit(api, calculator.id);
      await submit(api, calculator.id);
      await expectNoFurtherRequests(receiver);
      expect(receiver.requests).toHaveLength(0);
      const skipped = await listDeliveries(api, webhook.id);
      expect(skipped).toHaveLength(2);
      for (const d of skipped) {
        expect(d).toMatchObject({ status: 'skipped', attemptCount: 0, nextAttemptAt: null });
        expectTimestamp(d.completedAt);
      }
      // At no host: nothing for a drain to find.
      const ids = skipped.map((d) => d.id);
      expect(await hostsOf(env.t, ids)).toEqual([null, null]);
      expect(await nextDue(env.t, destinationOf(receiver.url))).toBeNull();
      // The spec's resources do not change: same body, still listed.
      expect((await api.get(`/webhooks/${webhook.id}`)).text).toBe(before);
      expect((await api.get('/webhooks')).text).toBe(listed);

      const enabled = await healthOf(api, webhook.id, 'enable');
      expect(enabled).toMatchObject({ state: 'active', disabledAt: null, disabledReason: null });
      await submit(api, calculator.id);
      await waitFor(() => receiver.requests.length === 1, 5000, 'a delivery after enable');
      await expectNoFurtherRequests(receiver);
      expect(receiver.requests).toHaveLength(1);
      const statuses = (await listDeliveries(api, webhook.id)).map((d) => d.status);
      expect(statuses.sort()).toEqual(['skipped', 'skipped', 'succeeded']);
    });

    it('with submissions in flight: nothing reaches the receiver after disable has returned', async () => {
      const receiver = await env.startReceiver(() => ({ status: 200, delayMs: 300 }));
      const { api, webhook, calculator } = await setupWebhook(env.t, receiver.url);
      let disabledAt = 0;
      const sent: { startedAt: number; id?: string; status?: number }[] = [];
      const stream = (async () => {
        for (let n = 0; !disabledAt || Date.now() < disabledAt + 300; n++) {
          const entry: (typeof sent)[number] = { startedAt: Date.now() };
          sent.push(entry);
          void api
            .post(`/calculators/${calculator.id}/submissions`, { data: { n } })
            .then((r) => Object.assign(entry, { id: r.body.data?.id, status: r.status }));
          await pace(20);
        }
      })();
      await waitFor(() => receiver.requests.length >= 3, 5000, 'attempts in flight');
      await healthOf(api, webhook.id, 'disable');
      disabledAt = Date.now();
      await stream;
      await waitFor(() => sent.every((e) => e.status !== undefined), 10_000, 'every submission to be answered');
      expect(sent.every((e) => e.status === 200)).toBe(true);
      await expectNoFurtherRequests(receiver);
      expect(receiver.requests.filter((r) => r.receivedAt > disabledAt)).toEqual([]);
      const rows: { status: string; submission_id: string }[] = await env.t.dataSource.query(
        'SELECT status, submission_id FROM deliveries WHERE webhook_id = $1',
        [webhook.id],
      );
      // Each delivery reached the receiver before disable returned, or was skipped.
      expect(rows.filter((r) => r.status !== 'succeeded' && r.status !== 'skipped')).toEqual([]);
      expect(rows.filter((r) => r.status === 'succeeded')).toHaveLength(
        new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size,
      );
      const after = new Set(sent.filter((e) => e.startedAt > disabledAt).map((e) => e.id));
      expect(after.size).toBeGreaterThan(0);
      expect(rows.filter((r) => after.has(r.submission_id)).every((r) => r.status === 'skipped')).toBe(true);
      expect((await healthOf(api, webhook.id)).pendingDeliveries).toBe(0);
    });

    it('refuses any body field with a 400 naming it, and changes nothing', async () => {
      const { api, webhook } = await setupWebhook(env.t, 'https://example.com/body');
      const snapshot = await snapshotDatabase(env.t);
      for (const action of ['disable', 'enable']) {
        expectBadRequest(await api.post(`/webhooks/${webhook.id}/${action}`, { reason: 'x' }), 'reason');
        expectBadRequest(await api.post(`/webhooks/${webhook.id}/${action}`, [1]));
      }
      expect(await snapshotDatabase(env.t)).toEqual(snapshot);
      // An empty object is no body.
      expect((await api.post(`/webhooks/${webhook.id}/disable`, {})).status).toBe(200);
    });

    it('keeps a streak that reached the minimum but is younger than WEBHOOK_DISABLE_AFTER; enable resets it', async () => {
      const receiver = await env.startReceiver(() => ({ status: 500, body: 'down' }));
      const { api, webhook, calculator } = await setupWebhook(env.t, receiver.url);
      await submit(api, calculator.id);
      const [delivery] = await deliveriesOf(api, webhook.id, 1, 'three failed attempts');
      expect(delivery).toMatchObject({ status: 'failed', attemptCount: 3 });
      const health = await healthOf(api, webhook.id);
      expect(health).toMatchObject({
        state: 'active',
        consecutiveFailures: 3,
        lastError: 'Receiver answered HTTP 500',
        lastSuccessAt: null,
        lastAttemptAt: delivery.lastAttemptAt,
      });
      await healthOf(api, webhook.id, 'disable');
      expect(await healthOf(api, webhook.id, 'enable')).toMatchObject({ state: 'active', consecutiveFailures: 0 });
    });

    it('resets the streak on any 2xx', async () => {
      let fail = true;
      const receiver = await env.startReceiver(() => (fail ? { status: 503 } : { status: 204 }));
      const { api, webhook, calculator } = await setupWebhook(env.t, receiver.url);
      await submit(api, calculator.id);
      await deliveriesOf(api, webhook.id, 1, 'three failed attempts');
      expect((await healthOf(api, webhook.id)).consecutiveFailures).toBe(3);
      fail = false;
      await submit(api, calculator.id);
      const list = await deliveriesOf(api, webhook.id, 2, 'the second delivery');
      const succeeded = list.find((d) => d.status === 'succeeded')!;
      expect(await healthOf(api, webhook.id)).toMatchObject({
        state: 'active',
        consecutiveFailures: 0,
        lastSuccessAt: succeeded.lastAttemptAt,
        lastAttemptAt: succeeded.lastAttemptAt,
        lastError: 'Receiver answered HTTP 503',
      });
    });
  });

  describe('automatic disabling', () => {
    it('disables on 410 Gone (reason gone), logs it at warn, counts it, and sends nothing more', async () => {
      const receiver = await env.startReceiver(() => ({ status: 410 }));
      const { api, webhook, calculator, workspace, secret } = await setupWebhook(env.t, receiver.url);
      const counted = await disabledMetric('gone');
      await submit(api, calculator.id);
      const [delivery] = await deliveriesOf(api, webhook.id, 1, 'the 410 attempt');
      expect(delivery).toMatchObject({ status: 'failed', attemptCount: 1, lastStatusCode: 410 });
      const health = await healthOf(api, webhook.id);
      expect(health).toMatchObject({ state: 'disabled', disabledReason: 'gone', consecutiveFailures: 1 });
      expectTimestamp(health.disabledAt);
      expect(await disabledMetric('gone')).toBe(counted + 1);
      const line = await waitFor(() => disabledLine(webhook.id), 2000, 'the warn line');
      expect(line).toMatchObject({ level: 'warn', webhookId: webhook.id, workspaceId: workspace.id, reason: 'gone' });
      expect(line.raw).not.toContain(secret);

      await submit(api, calculator.id);
      await expectNoFurtherRequests(receiver);
      expect(receiver.requests).toHaveLength(1);
      expect((await listDeliveries(api, webhook.id)).map((d) => d.status)).toEqual(['skipped', 'failed']);
    });

    it('disables when a failure makes the streak reach the minimum while its first failure is older than the bound', async () => {
      const receiver = await env.startReceiver(() => ({ status: 500 }));
      const { api, webhook, calculator, workspace } = await setupWebhook(env.t, receiver.url);
      const counted = await disabledMetric('failing');
      await submit(api, calculator.id);
      await deliveriesOf(api, webhook.id, 1, 'three failed attempts');
      expect(await healthOf(api, webhook.id)).toMatchObject({ state: 'active', consecutiveFailures: 3 });
      expect(disabledLine(webhook.id)).toBeUndefined();

      await untilClock(receiver.requests[0].receivedAt + 1600); // the streak's first failure is older than 1.5 s
      await submit(api, calculator.id);
      const list = await deliveriesOf(api, webhook.id, 2, 'the fourth failure');
      const health = await healthOf(api, webhook.id);
      expect(health).toMatchObject({ state: 'disabled', disabledReason: 'failing', consecutiveFailures: 4 });
      expect(health.pendingDeliveries).toBe(0);
      // The delivery that disabled it is skipped after its one attempt: nothing more is sent.
      expect(list[0]).toMatchObject({ status: 'skipped', attemptCount: 1 });
      await expectNoFurtherRequests(receiver);
      expect(receiver.requests).toHaveLength(4);
      expect(await disabledMetric('failing')).toBe(counted + 1);
      expect(disabledLine(webhook.id)).toMatchObject({ level: 'warn', workspaceId: workspace.id, reason: 'failing' });
    });
  });
});

describe('webhook pause and retry, slow retries (next attempt after an hour)', () => {
  const env = useFastDeliveryApp({ DELIVERY_RETRY_SCHEDULE: '1h' });

  /** A webhook whose first attempt failed (500), its delivery pending for an hour. */
  async function pendingDelivery(behaviour: Behaviour) {
    const receiver = await env.startReceiver(behaviour);
    const setup = await setupWebhook(env.t, receiver.url);
    await submit(setup.api, setup.calculator.id);
    const [delivery] = await waitFor(
      async () => {
        const list = await listDeliveries(setup.api, setup.webhook.id);
        return list[0]?.attemptCount === 1 ? list : null;
      },
      5000,
      'the first attempt',
    );
    expect(delivery.status).toBe('pending');
    expect(new Date(delivery.nextAttemptAt!).getTime()).toBeGreaterThan(Date.now() + 40 * 60_000);
    return { ...setup, receiver, delivery };
  }

  it('disabling turns pending deliveries skipped, leaving their host nothing to drain', async () => {
    const { api, webhook, delivery, receiver } = await pendingDelivery(() => ({ status: 500 }));
    expect((await healthOf(api, webhook.id)).pendingDeliveries).toBe(1);
    const disabled = await healthOf(api, webhook.id, 'disable');
    expect(disabled.pendingDeliveries).toBe(0);
    const after = await getDelivery(api, webhook.id, delivery.id);
    expect(after).toMatchObject({ status: 'skipped', nextAttemptAt: null, attemptCount: 1 });
    expectTimestamp(after.completedAt);
    expect(await nextDue(env.t, destinationOf(receiver.url))).toBeNull();
    expect(receiver.requests).toHaveLength(1);
    // Removal works as usual on a disabled webhook; its skipped delivery stays skipped.
    expectJson(await api.delete(`/webhooks/${webhook.id}`), 200);
    expectNotFound(await api.get(`/webhooks/${webhook.id}/health`));
    const [{ status }] = await env.t.dataSource.query('SELECT status FROM deliveries WHERE id = $1', [delivery.id]);
    expect(status).toBe('skipped');
  });

  it('the claim never attempts a delivery of a disabled webhook: it marks it skipped', async () => {
    const { webhook, delivery, receiver } = await pendingDelivery(() => ({ status: 500 }));
    // A disable that committed after this delivery was made pending (as when it races a submission), which
    // its host's drain then finds due.
    await env.t.dataSource.query(`UPDATE webhooks SET disabled_at = now(), disabled_reason = 'manual' WHERE id = $1`, [
      webhook.id,
    ]);
    const [[{ host }]] = await env.t.dataSource.query(
      'UPDATE deliveries SET next_attempt_at = now() WHERE id = $1 RETURNING host',
      [delivery.id],
    );
    await env.t.app.get(HostWakes).wake([{ host }]);
    const skipped = await waitFor(async () => {
      const [row] = await env.t.dataSource.query('SELECT status, attempt_count FROM deliveries WHERE id = $1', [
        delivery.id,
      ]);
      return row.status === 'skipped' ? row : null;
    });
    expect(skipped.attempt_count).toBe(1);
    await expectNoFurtherRequests(receiver);
    expect(receiver.requests).toHaveLength(1);
    expect(await nextDue(env.t, host)).toBeNull();
  });

  it('POST .../retry on a pending delivery moves its next attempt to now, adding no attempt', async () => {
    const { api, webhook, delivery, receiver } = await pendingDelivery((_, i) => ({ status: i === 0 ? 500 : 200 }));
    const res = await api.post(`/webhooks/${webhook.id}/deliveries/${delivery.id}/retry`);
    expectJson(res, 202);
    expect(res.body.data).toMatchObject({ id: delivery.id, status: 'pending', attemptCount: 1, maxAttempts: 2 });
    expect(new Date(res.body.data.nextAttemptAt).getTime()).toBeLessThanOrEqual(Date.now());
    await waitFor(() => receiver.requests.length === 2, 5000, 'the moved attempt');
    const done = await waitFor(async () => {
      const d = await getDelivery(api, webhook.id, delivery.id);
      return d.status === 'succeeded' ? d : null;
    });
    expect(done).toMatchObject({ attemptCount: 2, maxAttempts: 2 });
    // The retry made it due: its attempt is logged as the retry's.
    expect(done.attempts.map((a) => a.trigger)).toEqual(['scheduled', 'manual']);
  });

  it('a skipped delivery counts as ended: retried once more after enable; on a disabled webhook retry is a 400', async () => {
    const { api, webhook, delivery, receiver } = await pendingDelivery((_, i) => ({ status: i === 0 ? 500 : 200 }));
    await healthOf(api, webhook.id, 'disable');
    const snapshot = await snapshotDatabase(env.t);
    expectBadRequest(await api.post(`/webhooks/${webhook.id}/deliveries/${delivery.id}/retry`), 'webhookId');
    expect(await snapshotDatabase(env.t)).toEqual(snapshot);

    await healthOf(api, webhook.id, 'enable');
    const res = await api.post(`/webhooks/${webhook.id}/deliveries/${delivery.id}/retry`);
    expectJson(res, 202);
    expect(res.body.data).toMatchObject({ status: 'pending', attemptCount: 1, maxAttempts: 2 });
    await waitFor(() => receiver.requests.length === 2, 5000, 'the manual attempt');
    const done = await waitFor(async () => {
      const d = await getDelivery(api, webhook.id, delivery.id);
      return d.status === 'succeeded' ? d : null;
    });
    expect(done.attempts.map((a) => a.trigger)).toEqual(['scheduled', 'manual']);
  });

  describe('the attempt record (group commit of many attempts in one statement)', () => {
    /** A webhook with `count` deliveries whose first attempt failed, pending for an hour. */
    async function webhookWithPending(count: number) {
      const receiver = await env.startReceiver(() => ({ status: 500 }));
      const setup = await setupWebhook(env.t, receiver.url);
      for (let i = 0; i < count; i++) await submit(setup.api, setup.calculator.id, { data: { i } });
      const deliveries = await waitFor(async () => {
        const list = await listDeliveries(setup.api, setup.webhook.id);
        return list.length === count && list.every((d) => d.attemptCount === 1) ? list.reverse() : null;
      });
      return { ...setup, deliveries };
    }
    const attempt = (
      delivery: { id: string; createdAt: string },
      attemptNumber: number,
      at: number,
      statusCode: number,
    ): AttemptRecord => ({
      deliveryId: delivery.id,
      deliveryCreatedAt: new Date(delivery.createdAt),
      attemptNumber,
      trigger: 'scheduled',
      startedAt: new Date(at),
      durationMs: 5,
      statusCode,
      responseExcerpt: null,
      error: statusCode < 300 ? null : `Receiver answered HTTP ${statusCode}`,
      succeeded: statusCode < 300,
      status: statusCode < 300 ? 'succeeded' : 'pending',
      nextAttemptAt: statusCode < 300 ? null : new Date(at + 3_600_000),
      finishedAt: new Date(at + 5),
    });
    // The batch as the worker's Batcher hands it over, so the attempts share one statement.
    const writeBatch = (records: AttemptRecord[]) =>
      (env.t.app.get(AttemptRecords) as unknown as { write: (r: AttemptRecord[]) => Promise<unknown[]> }).write(
        records,
      );

    it("folds a batch's attempts of one webhook into its streak in attempt order", async () => {
      const { api, webhook, deliveries } = await webhookWithPending(3);
      expect((await healthOf(api, webhook.id)).consecutiveFailures).toBe(3);
      const t0 = Date.now();
      const [a, b, c] = deliveries;
      expect(
        await writeBatch([attempt(a, 2, t0, 500), attempt(b, 2, t0 + 10, 200), attempt(c, 2, t0 + 20, 502)]),
      ).toEqual(['pending', 'succeeded', 'pending']);
      expect(await healthOf(api, webhook.id)).toMatchObject({
        state: 'active',
        consecutiveFailures: 1,
        lastSuccessAt: new Date(t0 + 10).toISOString(),
        lastAttemptAt: new Date(t0 + 20).toISOString(),
        lastError: 'Receiver answered HTTP 502',
      });
      // Success last: the streak is 0 whatever failed before it in the batch.
      expect(await writeBatch([attempt(a, 3, t0 + 30, 500), attempt(c, 3, t0 + 40, 204)])).toEqual([
        'pending',
        'succeeded',
      ]);
      expect(await healthOf(api, webhook.id)).toMatchObject({
        consecutiveFailures: 0,
        lastError: 'Receiver answered HTTP 500',
      });
    });

    it('lets batches over the same webhooks in opposite orders, and a disable racing a batch, all commit (no deadlock)', async () => {
      const one = await webhookWithPending(2);
      const two = await webhookWithPending(2);
      const t0 = Date.now();
      for (let n = 2; n < 22; n++) {
        const at = t0 + n * 10;
        // Pending again (as recovery would make them), so the disable below has deliveries to skip.
        await env.t.dataSource.query(
          `UPDATE deliveries SET status = 'pending', completed_at = NULL WHERE webhook_id = $1`,
          [one.webhook.id],
        );
        const [first, second, disabled] = await Promise.all([
          writeBatch([attempt(one.deliveries[0], n, at, 500), attempt(two.deliveries[0], n, at, 500)]),
          writeBatch([attempt(two.deliveries[1], n, at, 500), attempt(one.deliveries[1], n, at, 500)]),
          // Disable locks the webhook, then its deliveries; the batch must not hold a delivery while it waits.
          one.api.post(`/webhooks/${one.webhook.id}/disable`),
        ]);
        expect([...first, ...second].every((status) => status === 'pending' || status === 'skipped')).toBe(true);
        expect(disabled.status).toBe(200);
        await healthOf(one.api, one.webhook.id, 'enable');
      }
      expect((await healthOf(two.api, two.webhook.id)).consecutiveFailures).toBe(2 + 2 * 20);
      expect((await healthOf(one.api, one.webhook.id)).consecutiveFailures).toBe(0); // enable reset it
    });
  });
});
