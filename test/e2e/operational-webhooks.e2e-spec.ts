import type { DeliveryDetailResponse } from '../../src/delivery/log/delivery.serializer.js';
import type { OperationalEvent } from '../../src/operational-webhooks/operational-event.js';
import type { CreatedOperationalWebhookResponse } from '../../src/operational-webhooks/operational-webhook.serializer.js';
import type { WebhookHealth } from '../../src/webhooks/webhook.serializer.js';
import {
  expectNoFurtherRequests,
  FAST_MAX_ATTEMPTS,
  setupWebhook,
  submit,
  useFastDeliveryApp,
  verifySignature,
  waitForEndedDelivery,
} from '../support/delivery.js';
import {
  client,
  expectBadRequest,
  expectJson,
  expectNotFound,
  expectTimestamp,
  keysOf,
  listWebhooks,
  registerWebhook,
  type Client,
} from '../support/management-api.js';
import { waitFor, type Receiver } from '../support/receiver.js';
import { createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

const OPERATIONAL_WEBHOOK_KEYS = [
  'createdAt',
  'events',
  'id',
  'lastAttemptAt',
  'lastError',
  'lastSuccessAt',
  'updatedAt',
  'url',
];
const ALL_EVENTS = ['webhook.disabled', 'webhook.enabled', 'delivery.failed', 'recovery.completed'];
const iso = (ms: number) => new Date(ms).toISOString();

async function registerOperational(api: Client, body: object): Promise<CreatedOperationalWebhookResponse> {
  const res = await api.post('/operational-webhooks', body);
  expectJson(res, 200);
  expect(keysOf(res.body)).toEqual(['data']);
  expect(keysOf(res.body.data)).toEqual([...OPERATIONAL_WEBHOOK_KEYS, 'secret'].sort());
  expect(res.body.data.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  return res.body.data as CreatedOperationalWebhookResponse;
}

/** The events `receiver` got, each after checking its Standard Webhooks signature with `secret`. */
const eventsAt = (receiver: Receiver, secret: string) =>
  receiver.requests.map((request) => verifySignature(secret, request) as OperationalEvent);

async function waitForEvent(receiver: Receiver, secret: string, type: string): Promise<OperationalEvent> {
  return waitFor(() => eventsAt(receiver, secret).find((e) => e.type === type), 10_000, `a ${type} event`);
}

async function healthOf(api: Client, webhookId: string, action?: 'disable' | 'enable'): Promise<WebhookHealth> {
  const res = action
    ? await api.post(`/webhooks/${webhookId}/${action}`)
    : await api.get(`/webhooks/${webhookId}/health`);
  expectJson(res, 200);
  return res.body.data as WebhookHealth;
}

async function workspaceDelivery(api: Client, deliveryId: string): Promise<DeliveryDetailResponse> {
  const res = await api.get(`/deliveries/${deliveryId}`);
  expectJson(res, 200);
  return res.body.data as DeliveryDetailResponse;
}

// Fast retries (3 attempts in about 300 ms); a webhook failing 3 times over 200 ms is disabled (`failing`).
describe('operational webhooks (DESIGN 10)', () => {
  const env = useFastDeliveryApp({ WEBHOOK_DISABLE_MIN_FAILURES: '3', WEBHOOK_DISABLE_AFTER: '200ms' });

  describe('POST, GET and DELETE /operational-webhooks', () => {
    it('registers one (its secret shown once), lists and shows it, never among the webhooks; audits both changes', async () => {
      const { api } = await setupWebhook(env.t, 'https://example.com/hook');
      const before = Date.now();
      const created = await registerOperational(api, {
        url: 'https://example.com/operations',
        events: ['webhook.enabled', 'delivery.failed', 'webhook.enabled'],
      });
      expect(created).toMatchObject({
        url: 'https://example.com/operations',
        events: ['webhook.enabled', 'delivery.failed'],
        lastAttemptAt: null,
        lastSuccessAt: null,
        lastError: null,
      });
      expectTimestamp(created.createdAt);
      expect(Date.parse(created.createdAt)).toBeGreaterThanOrEqual(before - 5);
      const { secret, ...shown } = created;
      expect(secret).toBeDefined();

      const list = await api.get('/operational-webhooks');
      expectJson(list, 200);
      expect(list.body).toEqual({ data: [shown] });
      const one = await api.get(`/operational-webhooks/${created.id}`);
      expectJson(one, 200);
      expect(one.body).toEqual({ data: shown });

      // Not a webhook of the spec: absent from its list, and every /webhooks/{id} route says 404.
      expect((await listWebhooks(api)).map((w) => w.id)).not.toContain(created.id);
      expectNotFound(await api.get(`/webhooks/${created.id}`));
      expectNotFound(await api.get(`/webhooks/${created.id}/secret`));
      expectNotFound(await api.get(`/webhooks/${created.id}/health`));
      expectNotFound(await api.post(`/webhooks/${created.id}/disable`));
      expectNotFound(await api.post(`/webhooks/${created.id}/test`));
      expectNotFound(await api.delete(`/webhooks/${created.id}`));

      const removed = await api.delete(`/operational-webhooks/${created.id}`);
      expectJson(removed, 200);
      expect(removed.body).toEqual({ data: shown });
      expectNotFound(await api.get(`/operational-webhooks/${created.id}`));
      expectNotFound(await api.delete(`/operational-webhooks/${created.id}`));
      expect((await api.get('/operational-webhooks')).body).toEqual({ data: [] });

      const audit = await api.get('/audit-events');
      expectJson(audit, 200);
      const changes = (audit.body.data as { action: string; target: unknown; changes: unknown }[])
        .filter((e) => e.action.startsWith('operational_webhook.'))
        .map(({ action, target, changes }) => ({ action, target, changes }));
      const change = { url: created.url, events: created.events };
      const target = { type: 'operational_webhook', id: created.id };
      expect(changes).toEqual([
        { action: 'operational_webhook.removed', target, changes: change },
        { action: 'operational_webhook.created', target, changes: change },
      ]);
      expect(JSON.stringify(audit.body)).not.toContain(secret);
    });

    it.each([
      ['no url', { events: ['webhook.disabled'] }, 'url'],
      ['a url that is not http(s)', { url: 'ftp://example.com/x', events: ['webhook.disabled'] }, 'url'],
      ['a url with credentials', { url: 'https://user:pw@example.com/x', events: ['webhook.disabled'] }, 'url'],
      ['no events', { url: 'https://example.com/x' }, 'events'],
      ['empty events', { url: 'https://example.com/x', events: [] }, 'events'],
      ['an unknown event', { url: 'https://example.com/x', events: ['newSubmission'] }, 'events'],
      ['events not an array', { url: 'https://example.com/x', events: 'webhook.disabled' }, 'events'],
      ['an unknown field', { url: 'https://example.com/x', events: ['webhook.disabled'], secret: 'x' }, 'secret'],
    ])('is a 400 naming the field for %s, and registers nothing', async (_case, body, field) => {
      const { key } = await createWorkspace(env.t);
      const api = client(env.t, key);
      expectBadRequest(await api.post('/operational-webhooks', body), field);
      expect((await api.get('/operational-webhooks')).body).toEqual({ data: [] });
    });

    it("answers 404 for another workspace's operational webhook, and for an id that cannot be one", async () => {
      const theirs = client(env.t, (await createWorkspace(env.t)).key);
      const mine = client(env.t, (await createWorkspace(env.t)).key);
      const created = await registerOperational(theirs, { url: 'https://example.com/x', events: ALL_EVENTS });
      expectNotFound(await mine.get(`/operational-webhooks/${created.id}`));
      expectNotFound(await mine.delete(`/operational-webhooks/${created.id}`));
      expectNotFound(await mine.get('/operational-webhooks/not-an-id'));
      expect((await mine.get('/operational-webhooks')).body).toEqual({ data: [] });
      expectJson(await theirs.get(`/operational-webhooks/${created.id}`), 200);
    });

    it('replays a POST with the same Idempotency-Key (the same secret) and registers one', async () => {
      const api = client(env.t, (await createWorkspace(env.t)).key);
      const body = { url: 'https://example.com/x', events: ['webhook.disabled'] };
      const first = await api.post('/operational-webhooks', body).set('Idempotency-Key', 'ops-1');
      const again = await api.post('/operational-webhooks', body).set('Idempotency-Key', 'ops-1');
      expectJson(again, 200);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body).toEqual(first.body);
      expect((await api.get('/operational-webhooks')).body.data).toHaveLength(1);
    });
  });

  describe('events', () => {
    it('sends webhook.disabled (by hand) and webhook.enabled, signed, only to those subscribed', async () => {
      const hook = await env.startReceiver();
      const { api, webhook } = await setupWebhook(env.t, hook.url);
      const subscribed = await env.startReceiver();
      const other = await env.startReceiver();
      const ops = await registerOperational(api, {
        url: subscribed.url,
        events: ['webhook.disabled', 'webhook.enabled'],
      });
      await registerOperational(api, { url: other.url, events: ['delivery.failed'] });
      // Another workspace's operational webhook hears nothing of this one.
      const stranger = await env.startReceiver();
      await registerOperational(client(env.t, (await createWorkspace(env.t)).key), {
        url: stranger.url,
        events: ALL_EVENTS,
      });

      const disabled = await healthOf(api, webhook.id, 'disable');
      // Written in the disable's own transaction: in the log as soon as the change has answered.
      const outbox = await api.get(`/deliveries?webhookId=${ops.id}`);
      expect((outbox.body.data as { event: string }[]).map((d) => d.event)).toEqual(['webhook.disabled']);
      const disabledEvent = await waitForEvent(subscribed, ops.secret, 'webhook.disabled');
      expect(keysOf(disabledEvent)).toEqual(['data', 'timestamp', 'type']);
      expectTimestamp(disabledEvent.timestamp);
      expect(disabledEvent.data).toEqual({
        webhook: { id: webhook.id, name: webhook.name, url: webhook.url },
        reason: 'manual',
        lastError: null,
        disabledAt: disabled.disabledAt,
      });
      expect(subscribed.requests[0].headers['content-type']).toBe('application/json');

      const before = Date.now();
      await healthOf(api, webhook.id, 'enable');
      const enabledOutbox = await api.get(`/deliveries?webhookId=${ops.id}`);
      expect((enabledOutbox.body.data as { event: string }[]).map((d) => d.event)).toEqual([
        'webhook.enabled',
        'webhook.disabled',
      ]);
      const enabledEvent = await waitForEvent(subscribed, ops.secret, 'webhook.enabled');
      expect(enabledEvent.data).toEqual({
        webhook: { id: webhook.id, name: webhook.name, url: webhook.url },
        enabledAt: expect.any(String),
      });
      expect(Date.parse((enabledEvent.data as { enabledAt: string }).enabledAt)).toBeGreaterThanOrEqual(before - 5);

      // Disabling a disabled webhook, or enabling an active one, changes nothing and says nothing.
      await healthOf(api, webhook.id, 'enable');
      await expectNoFurtherRequests(subscribed, other, stranger);
      expect(subscribed.requests).toHaveLength(2);
      expect(other.requests).toHaveLength(0);
      expect(stranger.requests).toHaveLength(0);

      // Each is logged in the workspace's deliveries as a delivery of the operational webhook.
      const logged = await api.get(`/deliveries?webhookId=${ops.id}`);
      expectJson(logged, 200);
      expect((logged.body.data as { event: string; status: string }[]).map((d) => [d.event, d.status])).toEqual([
        ['webhook.enabled', 'succeeded'],
        ['webhook.disabled', 'succeeded'],
      ]);
      const detail = await workspaceDelivery(api, subscribed.requests[0].headers['webhook-id'] as string);
      expect(detail.payload).toEqual(disabledEvent);
      expect(detail.submissionId).toBeNull();
      expect(detail.event).toBe('webhook.disabled');
    });

    it('sends delivery.failed when the schedule is exhausted, then webhook.disabled (failing) with the last error', async () => {
      const hook = await env.startReceiver(() => ({ status: 500, body: 'down for maintenance' }));
      const { api, webhook, calculator } = await setupWebhook(env.t, hook.url);
      const receiver = await env.startReceiver();
      const ops = await registerOperational(api, { url: receiver.url, events: ALL_EVENTS });
      await submit(api, calculator.id, { data: { answer: 42 } });

      const failed = await waitForEvent(receiver, ops.secret, 'delivery.failed');
      const delivery = await waitForEndedDelivery(api, webhook.id);
      expect(delivery.status).toBe('failed');
      const last = delivery.attempts.at(-1)!;
      expect(failed.data).toEqual({
        deliveryId: delivery.id,
        webhook: { id: webhook.id, name: webhook.name, url: webhook.url },
        lastAttempt: {
          attemptNumber: FAST_MAX_ATTEMPTS,
          startedAt: last.startedAt,
          durationMs: last.durationMs,
          statusCode: 500,
          responseBody: 'down for maintenance',
          error: last.error,
        },
        payload: JSON.parse(hook.requests[0].body),
      });
      expect(failed.data).toMatchObject({ payload: delivery.payload });

      const disabled = await waitForEvent(receiver, ops.secret, 'webhook.disabled');
      expect(disabled.data).toMatchObject({ reason: 'failing', lastError: last.error });
      expect((await healthOf(api, webhook.id)).state).toBe('disabled');
    });

    it('sends delivery.failed and webhook.disabled (gone) on a 410', async () => {
      const hook = await env.startReceiver(() => ({ status: 410 }));
      const { api, webhook, calculator } = await setupWebhook(env.t, hook.url);
      const receiver = await env.startReceiver();
      const ops = await registerOperational(api, {
        url: receiver.url,
        events: ['delivery.failed', 'webhook.disabled'],
      });
      await submit(api, calculator.id);

      const failed = await waitForEvent(receiver, ops.secret, 'delivery.failed');
      expect(failed.data).toMatchObject({
        webhook: { id: webhook.id },
        lastAttempt: { attemptNumber: 1, statusCode: 410 },
      });
      const disabled = await waitForEvent(receiver, ops.secret, 'webhook.disabled');
      expect(disabled.data).toMatchObject({ webhook: { id: webhook.id }, reason: 'gone' });
      expect(hook.requests).toHaveLength(1);
    });

    it("sends recovery.completed with the recovery's id and counts", async () => {
      let failing = true;
      const hook = await env.startReceiver(() => ({ status: failing ? 503 : 200 }));
      const { api, webhook, calculator } = await setupWebhook(env.t, hook.url);
      const since = iso(Date.now() - 1_000);
      await submit(api, calculator.id);
      await waitForEndedDelivery(api, webhook.id);
      failing = false;
      await healthOf(api, webhook.id, 'enable'); // the 503s disabled it (failing)

      const receiver = await env.startReceiver();
      const ops = await registerOperational(api, { url: receiver.url, events: ['recovery.completed'] });
      const res = await api.post(`/webhooks/${webhook.id}/recover`, { since });
      expectJson(res, 202);
      const recovery = res.body.data as { id: string; until: string };

      const completed = await waitForEvent(receiver, ops.secret, 'recovery.completed');
      const shown = await api.get(`/webhooks/${webhook.id}/recoveries/${recovery.id}`);
      expect(completed.data).toEqual({
        recoveryId: recovery.id,
        webhookId: webhook.id,
        since,
        until: recovery.until,
        matched: 1,
        requeued: 1,
        completedAt: shown.body.data.completedAt,
      });
      await expectNoFurtherRequests(receiver);
      expect(receiver.requests).toHaveLength(1);
    });
  });

  describe('a failing operational webhook', () => {
    it('is retried and logged, is never disabled, disables no webhook, and its own failures send no event', async () => {
      const hook = await env.startReceiver();
      const { api, webhook, calculator } = await setupWebhook(env.t, hook.url);
      const bystander = await registerWebhook(api, { url: hook.url, calculators: [calculator.id] });
      const failing = await env.startReceiver(() => ({ status: 500, body: 'nope' }));
      const ops = await registerOperational(api, { url: failing.url, events: ALL_EVENTS });

      await healthOf(api, webhook.id, 'disable');
      await waitFor(() => failing.requests.length >= FAST_MAX_ATTEMPTS, 10_000, 'every attempt of the event');
      const deliveryId = failing.requests[0].headers['webhook-id'] as string;
      // The same delivery each time (one webhook-id), and its failure is no delivery.failed event (no loop).
      expect(new Set(failing.requests.map((r) => r.headers['webhook-id']))).toEqual(new Set([deliveryId]));
      const logged = await waitFor(
        async () => {
          const d = await workspaceDelivery(api, deliveryId);
          return d.status === 'failed' ? d : null;
        },
        10_000,
        'the event delivery to fail',
      );
      expect(logged.attempts.map((a) => [a.attemptNumber, a.statusCode, a.responseBody])).toEqual([
        [1, 500, 'nope'],
        [2, 500, 'nope'],
        [3, 500, 'nope'],
      ]);
      expect(logged.payload).toMatchObject({ type: 'webhook.disabled', data: { webhook: { id: webhook.id } } });
      await expectNoFurtherRequests(failing);
      expect(failing.requests).toHaveLength(FAST_MAX_ATTEMPTS);

      const shown = await api.get(`/operational-webhooks/${ops.id}`);
      expect(shown.body.data).toMatchObject({ lastError: expect.stringContaining('500'), lastSuccessAt: null });
      expectTimestamp(shown.body.data.lastAttemptAt);

      expect(await healthOf(api, bystander.id)).toMatchObject({ state: 'active', consecutiveFailures: 0 });
      // Still sent to (3 failed attempts over 300 ms would disable a webhook), and the webhook is unharmed.
      expect((await healthOf(api, webhook.id, 'enable')).state).toBe('active');
      await waitFor(() => failing.requests.length > FAST_MAX_ATTEMPTS, 10_000, 'the next event');
      expect(eventsAt(failing, ops.secret).at(-1)!.type).toBe('webhook.enabled');
    });
  });

  describe('DELETE /operational-webhooks/{id}', () => {
    it('stops its deliveries at once: a pending event is cancelled and never sent again', async () => {
      const hook = await env.startReceiver();
      const { api, webhook } = await setupWebhook(env.t, hook.url);
      const slow = await env.startReceiver(() => ({ status: 503 }));
      const ops = await registerOperational(api, { url: slow.url, events: ALL_EVENTS });
      await healthOf(api, webhook.id, 'disable');
      await waitFor(() => slow.requests.length >= 1, 10_000, 'the first attempt');
      const deliveryId = slow.requests[0].headers['webhook-id'] as string;

      expectJson(await api.delete(`/operational-webhooks/${ops.id}`), 200);
      const sent = slow.requests.length;
      await expectNoFurtherRequests(slow);
      expect(slow.requests).toHaveLength(sent);
      expect((await workspaceDelivery(api, deliveryId)).status).toBe('cancelled');

      // Nor does a later change send it anything.
      await healthOf(api, webhook.id, 'enable');
      await expectNoFurtherRequests(slow);
      expect(slow.requests).toHaveLength(sent);
    });
  });
});

describe('operational webhooks with the SSRF guard on (WEBHOOK_ALLOW_PRIVATE_TARGETS=false)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false', WORKER_ENABLED: 'false' });
  });
  afterAll(() => t.close());

  it.each(['http://localhost:8080/ops', 'http://127.0.0.1/ops', 'http://[::ffff:10.0.0.1]/ops'])(
    'refuses %s with a 400 naming url, as for webhooks',
    async (url) => {
      const api = client(t, (await createWorkspace(t)).key);
      const error = expectBadRequest(await api.post('/operational-webhooks', { url, events: ALL_EVENTS }), 'url');
      expect(error.message).toMatch(/SSRF guard/);
      expect((await api.get('/operational-webhooks')).body).toEqual({ data: [] });
    },
  );
});
