import { listDeliveries, setupWebhook, submit, useFastDeliveryApp, verifySignature } from '../support/delivery.js';
import {
  client,
  expectBadRequest,
  expectJson,
  keysOf,
  registerWebhook,
  WEBHOOK_KEYS,
  WEBHOOK_LIST_ITEM_KEYS,
  type Client,
} from '../support/management-api.js';
import { expectNothingFor, waitFor, type Receiver } from '../support/receiver.js';
import { createCalculator, createWorkspace } from '../support/test-app.js';

// A webhook's filter (DESIGN 11) against real receivers: evaluated when the submission is stored, so a
// submission it does not match makes no delivery; the settings count what it passed and held back.

const ctx = useFastDeliveryApp();

const BIG_FINISHED = '$.finished == true && $.data.loanAmount > 100000';
// The worker sends a due delivery within tens of ms; a second held back for this long was never going to go.
const NO_SEND_WINDOW_MS = 1_000;

interface Settings {
  filter: string | null;
  filterCounts: { since: string; passed: number; heldBack: number } | null;
}

async function patchFilter(api: Client, id: string, filter: string | null): Promise<Settings> {
  const res = await api.patch(`/webhooks/${id}`, { filter });
  expectJson(res, 200);
  return res.body.data as Settings;
}

async function settingsOf(api: Client, id: string): Promise<Settings> {
  const res = await api.get(`/webhooks/${id}/settings`);
  expectJson(res, 200);
  return res.body.data as Settings;
}

/** The submission ids the receiver got, from each verified payload. */
const receivedIds = (receiver: Receiver, secret: string) =>
  receiver.requests.map((r) => (verifySignature(secret, r) as { data: { id: string } }).data.id);

describe('PATCH /webhooks/{id} with a filter', () => {
  it('sends only the submissions it matches, and counts what it passed and held back', async () => {
    const receiver = await ctx.startReceiver();
    const { api, webhook, calculator, secret } = await setupWebhook(ctx.t, receiver.url);
    const set = await patchFilter(api, webhook.id, BIG_FINISHED);
    expect(set.filter).toBe(BIG_FINISHED);
    expect(set.filterCounts).toEqual({ since: expect.any(String), passed: 0, heldBack: 0 });

    const big = await submit(api, calculator.id, { data: { loanAmount: 250000 }, finished: true });
    const small = await submit(api, calculator.id, { data: { loanAmount: 5000 }, finished: true });
    const unfinished = await submit(api, calculator.id, { data: { loanAmount: 250000 }, finished: false });
    const mistyped = await submit(api, calculator.id, { data: { loanAmount: 'a lot' }, finished: true });

    await waitFor(() => receiver.requests.length === 1, 5000, 'the matching submission');
    await expectNothingFor(NO_SEND_WINDOW_MS, 'delivery of a held-back submission', () => receiver.requests.length > 1);
    expect(receivedIds(receiver, secret)).toEqual([big.id]);
    const deliveries = await listDeliveries(api, webhook.id);
    expect(deliveries.map((d) => d.submissionId)).toEqual([big.id]);
    for (const held of [small, unfinished, mistyped]) {
      const res = await api.get(`/deliveries?submissionId=${held.id}`);
      expectJson(res, 200);
      expect(res.body.data).toEqual([]);
    }
    expect((await settingsOf(api, webhook.id)).filterCounts).toMatchObject({ passed: 1, heldBack: 3 });
  });

  it('keeps the spec responses as they were: the filter shows only in the settings', async () => {
    const { api, webhook } = await setupWebhook(ctx.t, 'https://example.com/filtered');
    await patchFilter(api, webhook.id, BIG_FINISHED);
    const got = await api.get(`/webhooks/${webhook.id}`);
    expect(keysOf(got.body.data)).toEqual(WEBHOOK_KEYS);
    const list = await api.get('/webhooks');
    expect(keysOf(list.body.data[0])).toEqual(WEBHOOK_LIST_ITEM_KEYS);
    expect(JSON.stringify([got.body, list.body])).not.toContain('loanAmount');
  });

  it('compares $.createdAt as the payload writes it, an ISO 8601 UTC string', async () => {
    const receiver = await ctx.startReceiver();
    const { api, webhook, calculator, secret } = await setupWebhook(ctx.t, receiver.url);
    const before = await submit(api, calculator.id, { data: { n: 1 } });
    await waitFor(() => receiver.requests.length === 1, 5000, 'the unfiltered submission');
    await patchFilter(api, webhook.id, `$.createdAt > "${before.createdAt}"`);
    const after = await submit(api, calculator.id, { data: { n: 2 } });
    await waitFor(() => receiver.requests.length === 2, 5000, 'the later submission');
    expect(receivedIds(receiver, secret)).toEqual([before.id, after.id]);
    await patchFilter(api, webhook.id, `$.createdAt < "2000-01-01T00:00:00.000Z"`);
    await submit(api, calculator.id, { data: { n: 3 } });
    await expectNothingFor(NO_SEND_WINDOW_MS, 'delivery of a held-back submission', () => receiver.requests.length > 2);
    expect((await settingsOf(api, webhook.id)).filterCounts).toMatchObject({ passed: 0, heldBack: 1 });
  });

  it('starts the counts again for a new filter, keeps them for the same one, and null removes it', async () => {
    const receiver = await ctx.startReceiver();
    const { api, webhook, calculator } = await setupWebhook(ctx.t, receiver.url);
    await patchFilter(api, webhook.id, '$.finished == true');
    await submit(api, calculator.id, { data: {}, finished: false });
    const same = await patchFilter(api, webhook.id, '$.finished == true');
    expect(same.filterCounts).toMatchObject({ passed: 0, heldBack: 1 });
    const changed = await patchFilter(api, webhook.id, '$.finished == false');
    expect(changed.filterCounts).toMatchObject({ passed: 0, heldBack: 0 });
    expect(Date.parse(changed.filterCounts!.since)).toBeGreaterThanOrEqual(Date.parse(same.filterCounts!.since));
    const removed = await patchFilter(api, webhook.id, null);
    expect(removed).toMatchObject({ filter: null, filterCounts: null });
    await submit(api, calculator.id, { data: {}, finished: true });
    await waitFor(() => receiver.requests.length === 1, 5000, 'the submission once the filter is gone');
  });

  it('sends a test event whatever the filter', async () => {
    const receiver = await ctx.startReceiver();
    const { api, webhook } = await setupWebhook(ctx.t, receiver.url);
    await patchFilter(api, webhook.id, '$.data.never == true');
    expectJson(await api.post(`/webhooks/${webhook.id}/test`), 202);
    await waitFor(() => receiver.requests.length === 1, 5000, 'the test event');
  });

  it('records a matching submission to a disabled webhook as skipped, and makes nothing for one it holds back', async () => {
    const { api, webhook, calculator } = await setupWebhook(ctx.t, 'https://example.com/disabled');
    await patchFilter(api, webhook.id, '$.finished == true');
    expectJson(await api.post(`/webhooks/${webhook.id}/disable`), 200);
    const passed = await submit(api, calculator.id, { data: {}, finished: true });
    await submit(api, calculator.id, { data: {}, finished: false });
    const deliveries = await listDeliveries(api, webhook.id);
    expect(deliveries.map((d) => [d.submissionId, d.status])).toEqual([[passed.id, 'skipped']]);
    expect((await settingsOf(api, webhook.id)).filterCounts).toMatchObject({ passed: 1, heldBack: 1 });
  });

  it('counts every one of many concurrent submissions to webhooks with filters, once', async () => {
    const { workspace, key } = await createWorkspace(ctx.t);
    const api = client(ctx.t, key);
    const calculator = await createCalculator(ctx.t, workspace.id);
    const url = 'https://example.com/concurrent';
    const odd = await registerWebhook(api, { url, calculators: [calculator.id] });
    const all = await registerWebhook(api, { url, calculators: [calculator.id] });
    const none = await registerWebhook(api, { url, calculators: [calculator.id] });
    await patchFilter(api, odd.id, '$.data.n % 2 == 1');
    await patchFilter(api, all.id, '$.data.n >= 0');
    await patchFilter(api, none.id, '$.data.n < 0');
    await Promise.all(Array.from({ length: 60 }, (_, n) => submit(api, calculator.id, { data: { n } })));
    expect((await settingsOf(api, odd.id)).filterCounts).toMatchObject({ passed: 30, heldBack: 30 });
    expect((await settingsOf(api, all.id)).filterCounts).toMatchObject({ passed: 60, heldBack: 0 });
    expect((await settingsOf(api, none.id)).filterCounts).toMatchObject({ passed: 0, heldBack: 60 });
    const [{ count }] = await ctx.t.dataSource.query(
      `SELECT count(*)::int AS count FROM deliveries WHERE webhook_id = ANY($1)`,
      [[odd.id, all.id, none.id]],
    );
    expect(count).toBe(90);
    // Each submission counted on the calculator shard it held: shard by shard, the same counts.
    const byShard = await ctx.t.dataSource.query(
      `SELECT k.shard, k.count::int AS submissions, f.passed::int AS passed
       FROM calculator_submission_counters k
       FULL JOIN (SELECT * FROM webhook_filter_counters WHERE webhook_id = $2) f ON f.shard = k.shard
       WHERE k.calculator_id = $1 ORDER BY k.shard`,
      [calculator.id, all.id],
    );
    for (const row of byShard) expect(row.passed).toBe(row.submissions);
  });

  it.each([
    ['does not parse', '$.loanAmount >>> 5', /syntax error/],
    ['is not a predicate', '$.data.loanAmount', /must be a predicate/],
    ['is longer than 1,000 characters', `$.data.x == "${'a'.repeat(1000)}"`, /1000 characters/],
    ['is not a string', 42, /string/],
  ])('refuses a filter that %s with a 400 naming filter, and changes nothing', async (_case, filter, message) => {
    const { api, webhook } = await setupWebhook(ctx.t, 'https://example.com/refused');
    await patchFilter(api, webhook.id, '$.finished == true');
    const before = await api.get(`/webhooks/${webhook.id}`);
    const res = await api.patch(`/webhooks/${webhook.id}`, { name: 'renamed', filter });
    const error = expectBadRequest(res, 'filter');
    expect(
      error
        .details!.filter((d) => d.field === 'filter')
        .map((d) => d.message)
        .join('; '),
    ).toMatch(message);
    expect(JSON.stringify(res.body)).not.toMatch(/SELECT|jsonb_path_match|\$1/);
    expect((await api.get(`/webhooks/${webhook.id}`)).body).toEqual(before.body);
    expect(await settingsOf(api, webhook.id)).toMatchObject({ filter: '$.finished == true' });
  });

  it('records the filter in the audit log', async () => {
    const { api, webhook } = await setupWebhook(ctx.t, 'https://example.com/audited');
    await patchFilter(api, webhook.id, BIG_FINISHED);
    const res = await api.get('/audit-events?action=webhook.settings_changed');
    expectJson(res, 200);
    expect(res.body.data[0]).toMatchObject({ target: { id: webhook.id }, changes: { filter: BIG_FINISHED } });
  });
});
