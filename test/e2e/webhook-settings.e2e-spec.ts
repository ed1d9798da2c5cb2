import { USER_AGENT } from '../../src/delivery/engine/webhook-sender.js';
import {
  getDelivery,
  listDeliveries,
  setupWebhook,
  submit,
  useFastDeliveryApp,
  verifySignature,
  waitForEndedDelivery,
} from '../support/delivery.js';
import {
  client,
  expectBadRequest,
  expectError,
  expectJson,
  expectNotFound,
  keysOf,
  registerWebhook,
  WEBHOOK_KEYS,
  WEBHOOK_LIST_ITEM_KEYS,
  type Client,
} from '../support/management-api.js';
import { waitFor, type ReceivedRequest } from '../support/receiver.js';
import { createCalculator, createWorkspace } from '../support/test-app.js';

// Per-webhook settings (DESIGN 10): PATCH /webhooks/{id} and GET /webhooks/{id}/settings, and each setting
// acting in the delivery engine against real receivers: headers on every attempt, the timeout, the retry
// schedule and the in-flight cap.

const SETTINGS_KEYS = [
  'defaults',
  'filter',
  'filterCounts',
  'headers',
  'id',
  'maxInFlight',
  'name',
  'retrySchedule',
  'timeoutMs',
];
// Long enough to be shown by its first 4 characters; never in an answer, a log or the audit log in full.
const TOKEN = 'Bearer s3cr3t-receiver-token-0123456789';
const SHORT_TOKEN = 'k-9f2a';

const logLines: string[] = [];
// Attempts time out after 5 s by default here, so a webhook's own 1 s limit is what ends a 3 s answer.
const ctx = useFastDeliveryApp(
  {
    DELIVERY_TIMEOUT_MS: '5000',
    DELIVERY_RETRY_SCHEDULE_SHORT: '50ms,50ms,50ms,50ms',
    DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: '20',
    LOG_LEVEL: 'trace',
  },
  logLines,
);

const settingsOf = async (api: Client, id: string) => {
  const res = await api.get(`/webhooks/${id}/settings`);
  expectJson(res, 200);
  expect(keysOf(res.body)).toEqual(['data']);
  expect(keysOf(res.body.data)).toEqual(SETTINGS_KEYS);
  return res.body.data as Record<string, unknown>;
};

const patch = async (api: Client, id: string, body: object) => {
  const res = await api.patch(`/webhooks/${id}`, body);
  expectJson(res, 200);
  expect(keysOf(res.body.data)).toEqual(SETTINGS_KEYS);
  return res.body.data as Record<string, unknown>;
};

async function webhookAt(url = 'https://example.com/settings') {
  const { workspace, key } = await createWorkspace(ctx.t);
  const api = client(ctx.t, key);
  const calculator = await createCalculator(ctx.t, workspace.id);
  const webhook = await registerWebhook(api, { url, calculators: [calculator.id] });
  return { api, workspace, calculator, webhook, id: webhook.id };
}

describe('GET /webhooks/{id}/settings and PATCH /webhooks/{id}', () => {
  it("shows a new webhook's settings: no headers, the service defaults, the standard schedule", async () => {
    const { api, id } = await webhookAt();
    expect(await settingsOf(api, id)).toEqual({
      id,
      name: '',
      headers: {},
      timeoutMs: 5000,
      maxInFlight: 20,
      retrySchedule: 'standard',
      filter: null,
      filterCounts: null,
      defaults: { timeoutMs: true, maxInFlight: true },
    });
  });

  it('changes the fields given, answers the settings with header values masked, and keeps the spec shapes', async () => {
    const { api, id, webhook } = await webhookAt();
    const answer = await patch(api, id, {
      name: 'CRM',
      headers: { Authorization: TOKEN, 'X-Tenant': SHORT_TOKEN },
      timeoutMs: 2500,
      maxInFlight: 7,
      retrySchedule: 'short',
    });
    const expected = {
      id,
      name: 'CRM',
      headers: { authorization: 'Bear…', 'x-tenant': '••••' },
      timeoutMs: 2500,
      maxInFlight: 7,
      retrySchedule: 'short',
      filter: null,
      filterCounts: null,
      defaults: { timeoutMs: false, maxInFlight: false },
    };
    expect(answer).toEqual(expected);
    expect(await settingsOf(api, id)).toEqual(expected);
    const got = await api.get(`/webhooks/${id}`);
    expectJson(got, 200);
    expect(keysOf(got.body.data)).toEqual(WEBHOOK_KEYS);
    expect(got.body.data).toMatchObject({ name: 'CRM', url: webhook.url, createdAt: webhook.createdAt });
    expect(Date.parse(got.body.data.updatedAt)).toBeGreaterThan(Date.parse(webhook.updatedAt));
    const list = await api.get('/webhooks');
    expect(keysOf(list.body.data[0])).toEqual(WEBHOOK_LIST_ITEM_KEYS);
    expect(JSON.stringify([answer, got.body, list.body])).not.toContain('s3cr3t');
  });

  it('merges headers (null removes one, headers: null all of them) and resets a field to its default with null', async () => {
    const { api, id } = await webhookAt();
    await patch(api, id, { headers: { Authorization: TOKEN, 'X-One': 'one' }, timeoutMs: 1000, maxInFlight: 3 });
    const merged = await patch(api, id, { headers: { 'x-one': null, 'X-Two': 'two' } });
    expect(merged.headers).toEqual({ authorization: 'Bear…', 'x-two': '••••' });
    const reset = await patch(api, id, { headers: null, timeoutMs: null, maxInFlight: null, retrySchedule: null });
    expect(reset).toMatchObject({
      headers: {},
      timeoutMs: 5000,
      maxInFlight: 20,
      retrySchedule: 'standard',
      defaults: { timeoutMs: true, maxInFlight: true },
    });
  });

  it('changes nothing (not even updatedAt) for an empty body', async () => {
    const { api, id, webhook } = await webhookAt();
    const answer = await patch(api, id, {});
    expect(answer.name).toBe('');
    const got = await api.get(`/webhooks/${id}`);
    expect(got.body.data.updatedAt).toBe(webhook.updatedAt);
  });

  const eleven = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`x-h${i}`, 'v']));
  it.each([
    ['url', { url: 'https://example.com/other' }],
    ['calculators', { calculators: [] }],
    ['source', { source: 'zapier' }],
    ['unknown', { unknown: 1 }],
    ['name', { name: null }],
    ['name', { name: 'x'.repeat(256) }],
    ['name', { name: 'tab\there' }],
    ['timeoutMs', { timeoutMs: 999 }],
    ['timeoutMs', { timeoutMs: 30_001 }],
    ['timeoutMs', { timeoutMs: 1500.5 }],
    ['timeoutMs', { timeoutMs: '2000' }],
    ['maxInFlight', { maxInFlight: 0 }],
    ['maxInFlight', { maxInFlight: 101 }],
    ['retrySchedule', { retrySchedule: 'fast' }],
    ['headers', { headers: ['Authorization: x'] }],
    ['headers', { headers: 'Authorization: x' }],
    ['headers', { headers: { 'Content-Type': 'text/plain' } }],
    ['headers', { headers: { 'User-Agent': 'mine' } }],
    ['headers', { headers: { 'webhook-signature': 'v1,forged' } }],
    ['headers', { headers: { Connection: 'close' } }],
    ['headers', { headers: { 'Transfer-Encoding': 'chunked' } }],
    ['headers', { headers: { Host: 'example.org' } }],
    ['headers', { headers: { 'bad name': 'x' } }],
    ['headers', { headers: { 'x-ünïcode': 'x' } }],
    ['headers', { headers: { 'x-split': `${SHORT_TOKEN}\r\nx-injected: 1` } }],
    ['headers', { headers: { 'x-empty': '' } }],
    ['headers', { headers: { 'x-spaced': ` ${SHORT_TOKEN}` } }],
    ['headers', { headers: { 'x-number': 5 } }],
    ['headers', { headers: { 'x-long': 'v'.repeat(4097) } }],
    ['headers', { headers: { 'X-Twice': '1', 'x-twice': '2' } }],
    ['headers', { headers: eleven }],
  ])('refuses a bad %s with a 400 naming it, and changes nothing (case %#)', async (field, body) => {
    const { api, id } = await webhookAt();
    const before = await settingsOf(api, id);
    const res = await api.patch(`/webhooks/${id}`, body);
    expectBadRequest(res, field);
    expect(res.text).not.toContain(SHORT_TOKEN);
    expect(await settingsOf(api, id)).toEqual(before);
  });

  it('answers a PATCH without a body, or with a body that is not an object, without a 500', async () => {
    const { api, id } = await webhookAt();
    const bare = await api.request('patch', `/webhooks/${id}`);
    expectJson(bare, 200);
    expect(bare.body.data.name).toBe('');
    for (const body of ['[]', '"name"', 'null', '42']) {
      const res = await api.request('patch', `/webhooks/${id}`).set('content-type', 'application/json').send(body);
      expectBadRequest(res);
    }
    expect((await api.get('/audit-events?action=webhook.settings_changed')).body.data).toEqual([]);
  });

  it('keeps a header named like an Object.prototype key as a header', async () => {
    const { api, id } = await webhookAt();
    const answer = await patch(api, id, { headers: { toString: SHORT_TOKEN, constructor: SHORT_TOKEN } });
    expect(answer.headers).toEqual({ tostring: '••••', constructor: '••••' });
  });

  it('refuses a patch that would leave more than 10 headers, naming headers', async () => {
    const { api, id } = await webhookAt();
    const ten = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`x-h${i}`, 'v']));
    await patch(api, id, { headers: ten });
    expectBadRequest(await api.patch(`/webhooks/${id}`, { headers: { 'x-eleventh': 'v' } }), 'headers');
    expect(Object.keys((await settingsOf(api, id)).headers as object)).toHaveLength(10);
    // Replacing one within the ten is fine.
    await patch(api, id, { headers: { 'x-h0': null, 'x-eleventh': 'v' } });
  });

  it("answers 404 for another workspace's webhook, an unknown id and a removed webhook, and changes nothing", async () => {
    const mine = await webhookAt();
    const theirs = await webhookAt();
    expectNotFound(await mine.api.patch(`/webhooks/${theirs.id}`, { name: 'taken' }));
    expectNotFound(await mine.api.get(`/webhooks/${theirs.id}/settings`));
    expect((await settingsOf(theirs.api, theirs.id)).name).toBe('');
    expectNotFound(await mine.api.patch('/webhooks/unknownwebhookid000000000', { name: 'x' }));
    expectJson(await mine.api.delete(`/webhooks/${mine.id}`), 200);
    expectNotFound(await mine.api.patch(`/webhooks/${mine.id}`, { name: 'x' }));
    expectNotFound(await mine.api.get(`/webhooks/${mine.id}/settings`));
  });

  it('takes an Idempotency-Key: a repeat gets the first answer, replayed, and records one audit event', async () => {
    const { api, id } = await webhookAt();
    const send = (body: object) => api.patch(`/webhooks/${id}`, body).set('Idempotency-Key', `settings-${id}`);
    const first = await send({ maxInFlight: 4 });
    expectJson(first, 200);
    await patch(api, id, { maxInFlight: 9 });
    const again = await send({ maxInFlight: 4 });
    expectJson(again, 200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    expect((await settingsOf(api, id)).maxInFlight).toBe(9);
    expectError(await send({ maxInFlight: 5 }), 400, 'idempotency_key_reused');
    const events = await api.get('/audit-events?action=webhook.settings_changed');
    expect(events.body.data).toHaveLength(2);
  });

  it('records webhook.settings_changed with what changed, header names only, and no event for an empty patch', async () => {
    const { api, id } = await webhookAt();
    await patch(api, id, { name: 'Audited', headers: { Authorization: TOKEN }, timeoutMs: 2000 });
    await patch(api, id, { headers: { authorization: null } });
    await patch(api, id, {});
    const res = await api.get('/audit-events?action=webhook.settings_changed');
    expectJson(res, 200);
    const changes = (res.body.data as { changes: unknown; target: unknown }[]).map((e) => e.changes);
    expect(changes).toEqual([
      { headers: { authorization: 'removed' } },
      { name: 'Audited', headers: { authorization: 'set' }, timeoutMs: 2000 },
    ]);
    expect(res.body.data[0].target).toEqual({ type: 'webhook', id });
    expect(res.text).not.toContain('s3cr3t');
  });
});

describe('the settings in the delivery engine (real receivers)', () => {
  const attemptsOf = async (api: Client, webhookId: string) => {
    const [delivery] = await listDeliveries(api, webhookId);
    return (await getDelivery(api, webhookId, delivery.id)).attempts;
  };

  it('sends the headers on every attempt and the test event, after ours, which they cannot replace', async () => {
    const receiver = await ctx.startReceiver((_req, index) => ({ status: index === 0 ? 500 : 200 }));
    const { api, webhook, calculator, secret } = await setupWebhook(ctx.t, receiver.url);
    await patch(api, webhook.id, { headers: { Authorization: TOKEN, 'X-Tenant': SHORT_TOKEN } });
    await submit(api, calculator.id);
    expect((await waitForEndedDelivery(api, webhook.id)).status).toBe('succeeded');
    expectJson(await api.post(`/webhooks/${webhook.id}/test`), 202);
    await waitFor(() => receiver.requests.length === 3, 10_000, 'two attempts and the test event');
    for (const request of receiver.requests) {
      expect(request.headers).toMatchObject({
        authorization: TOKEN,
        'x-tenant': SHORT_TOKEN,
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
      });
      expect(verifySignature(secret, request)).toMatchObject({ webhookId: webhook.id });
    }
    expect(logLines.filter((line) => line.includes('s3cr3t') || line.includes(SHORT_TOKEN))).toEqual([]);
  });

  it('bounds an attempt by the webhook’s timeoutMs: a 3 s answer times out at 1 s, where the default waits', async () => {
    const receiver = await ctx.startReceiver(() => ({ status: 200, delayMs: 3000 }));
    const slow = await setupWebhook(ctx.t, receiver.url);
    await patch(slow.api, slow.webhook.id, { timeoutMs: 1000, retrySchedule: 'none' });
    const patient = await setupWebhook(ctx.t, receiver.url);
    await submit(slow.api, slow.calculator.id);
    await submit(patient.api, patient.calculator.id);
    const timedOut = await waitForEndedDelivery(slow.api, slow.webhook.id, 10_000);
    expect(timedOut).toMatchObject({ status: 'failed', attemptCount: 1, maxAttempts: 1 });
    expect(timedOut.attempts[0].error).toBe('Timed out after 1000 ms');
    expect(timedOut.attempts[0].durationMs).toBeLessThan(2000);
    const answered = await waitForEndedDelivery(patient.api, patient.webhook.id, 10_000);
    expect(answered).toMatchObject({ status: 'succeeded', attemptCount: 1 });
    expect(answered.attempts[0].durationMs).toBeGreaterThanOrEqual(3000);
  }, 20_000);

  it.each([
    ['none', 1],
    ['short', 5],
    ['standard', 3], // this file's DELIVERY_RETRY_SCHEDULE: 100ms,200ms
  ] as const)(
    'ends a failing delivery of a webhook on the %s schedule after %i attempts',
    async (schedule, attempts) => {
      const receiver = await ctx.startReceiver(() => ({ status: 500 }));
      const { api, webhook, calculator } = await setupWebhook(ctx.t, receiver.url);
      await patch(api, webhook.id, { retrySchedule: schedule });
      await submit(api, calculator.id);
      const ended = await waitForEndedDelivery(api, webhook.id);
      expect(ended).toMatchObject({ status: 'failed', attemptCount: attempts, maxAttempts: attempts });
      expect(receiver.requests).toHaveLength(attempts);
      expect((await attemptsOf(api, webhook.id)).map((a) => a.statusCode)).toEqual(Array(attempts).fill(500));
    },
  );

  it('ends a pending delivery at its next failure once its webhook is switched to none', async () => {
    // The first answer comes after the PATCH: that attempt was claimed under `short`, the next one is not.
    const receiver = await ctx.startReceiver((_req, index) => ({ status: 500, delayMs: index === 0 ? 1000 : 0 }));
    const { api, webhook, calculator } = await setupWebhook(ctx.t, receiver.url);
    await patch(api, webhook.id, { retrySchedule: 'short' });
    await submit(api, calculator.id);
    await waitFor(() => receiver.requests.length === 1, 5000, 'the first attempt');
    await patch(api, webhook.id, { retrySchedule: 'none' });
    const ended = await waitForEndedDelivery(api, webhook.id);
    expect(ended).toMatchObject({ status: 'failed', attemptCount: 2, maxAttempts: 5 });
  });

  /** Most requests open at once at a receiver of one webhook, from their arrival and answer times. */
  const mostOpen = (requests: ReceivedRequest[]) => Math.max(...requests.map((r) => r.openAtArrival));

  it('holds a webhook to its maxInFlight: 2 open at most while 20 deliveries are pending, and a PATCH applies', async () => {
    const receiver = await ctx.startReceiver(() => ({ status: 200, delayMs: 150 }));
    const { api, webhook, calculator } = await setupWebhook(ctx.t, receiver.url);
    await patch(api, webhook.id, { maxInFlight: 2 });
    for (let i = 0; i < 20; i++) await submit(api, calculator.id, { data: { i } });
    await waitFor(async () => receiver.requests.length === 20, 20_000, '20 deliveries');
    expect(mostOpen(receiver.requests)).toBe(2);

    // The worker now knows 2 from its claims; raised to 6, the next submissions' jobs carry 6.
    await patch(api, webhook.id, { maxInFlight: 6 });
    for (let i = 0; i < 20; i++) await submit(api, calculator.id, { data: { i } });
    await waitFor(async () => receiver.requests.length === 40, 20_000, '20 more deliveries');
    const second = receiver.requests.slice(20);
    expect(mostOpen(second)).toBeGreaterThan(2);
    expect(mostOpen(second)).toBeLessThanOrEqual(6);

    // And lowered again to 2, after the worker learned 6.
    await patch(api, webhook.id, { maxInFlight: 2 });
    for (let i = 0; i < 20; i++) await submit(api, calculator.id, { data: { i } });
    await waitFor(async () => receiver.requests.length === 60, 20_000, '20 more deliveries');
    expect(mostOpen(receiver.requests.slice(40))).toBeLessThanOrEqual(2);
  }, 60_000);
});
