import { createId } from '@paralleldrive/cuid2';
import { isCuid2 } from '../../src/core/ids.js';
import type { DeliveryResponse } from '../../src/delivery/log/delivery.serializer.js';
import {
  ATTEMPT_KEYS,
  DELIVERY_DETAIL_KEYS,
  DELIVERY_KEYS,
  expectNoFurtherRequests,
  FAST_MAX_ATTEMPTS,
  getDelivery,
  listDeliveries,
  setupWebhook,
  submit,
  useFastDeliveryApp,
  verifySignature,
  waitForEndedDelivery,
} from '../support/delivery.js';
import {
  API,
  expectBadRequest,
  expectJson,
  expectNotAuthenticated,
  expectNotFound,
  expectTimestamp,
  keysOf,
  registerWebhook,
  removeWebhook,
  type Client,
} from '../support/management-api.js';
import { untilClock, waitFor, type Behaviour } from '../support/receiver.js';
import type { TestApp } from '../support/test-app.js';

describe('delivery log', () => {
  const env = useFastDeliveryApp();
  const { startReceiver } = env;
  let t: TestApp;
  beforeAll(() => {
    t = env.t;
  });

  /** All of the webhook's deliveries, once none is pending. */
  const waitForAllEnded = (api: Client, webhookId: string, count: number) =>
    waitFor(
      async () => {
        const list = await listDeliveries(api, webhookId, '?limit=100');
        return list.length === count && list.every((d) => d.status !== 'pending') ? list : null;
      },
      10_000,
      `${count} ended deliveries`,
    );

  /** A webhook with `count` delivered submissions, made one after another. */
  const withDeliveries = async (count: number, behaviour?: Behaviour) => {
    const receiver = await startReceiver(behaviour);
    const setup = await setupWebhook(t, receiver.url);
    const submissions = [];
    for (let i = 0; i < count; i++) {
      const submission = await submit(setup.api, setup.calculator.id, { data: { n: i } });
      submissions.push(submission);
      await untilClock(Date.parse(submission.createdAt)); // distinct createdAt, so "newest first" is well defined
    }
    const deliveries = await waitForAllEnded(setup.api, setup.webhook.id, count);
    return { ...setup, receiver, submissions, deliveries };
  };

  // A retry right after the delivery ended may find its host's drain still running: the wake it leaves
  // marks the host, which the drain's end sees (HostWakes), so nothing waits for the drain here.
  const retry = (api: Client, webhookId: string, deliveryId: string) =>
    api.post(`/webhooks/${webhookId}/deliveries/${deliveryId}/retry`);

  describe('GET /webhooks/{id}/deliveries', () => {
    it('lists the deliveries newest first, each with exactly the delivery fields', async () => {
      const { webhook, submissions, deliveries } = await withDeliveries(3);

      expect(deliveries.map((d) => d.submissionId)).toEqual(submissions.map((s) => s.id).reverse());
      for (const d of deliveries) {
        expect(keysOf(d)).toEqual(DELIVERY_KEYS);
        expect(isCuid2(d.id)).toBe(true);
        expect(d).toMatchObject({
          webhookId: webhook.id,
          event: 'newSubmission',
          status: 'succeeded',
          attemptCount: 1,
          maxAttempts: FAST_MAX_ATTEMPTS,
          nextAttemptAt: null,
          lastStatusCode: 200,
          lastError: null,
        });
        for (const field of ['createdAt', 'updatedAt', 'lastAttemptAt', 'completedAt'] as const) {
          expectTimestamp(d[field]);
        }
      }
      expect(new Set(deliveries.map((d) => d.id)).size).toBe(3);
    });

    it('is an empty list for a webhook with no deliveries', async () => {
      const receiver = await startReceiver();
      const { api, webhook } = await setupWebhook(t, receiver.url);
      expect(await listDeliveries(api, webhook.id)).toEqual([]);
    });

    it('pages with limit and offset', async () => {
      const { api, webhook, deliveries } = await withDeliveries(3);
      const ids = deliveries.map((d) => d.id);
      const page = async (query: string) => (await listDeliveries(api, webhook.id, query)).map((d) => d.id);

      expect(await page('?limit=2')).toEqual(ids.slice(0, 2));
      expect(await page('?limit=2&offset=2')).toEqual(ids.slice(2));
      expect(await page('?offset=1')).toEqual(ids.slice(1));
      expect(await page('?offset=3')).toEqual([]);
      expect(await page('?limit=1000')).toEqual(ids);
      expect(await page('?limit=1&offset=0')).toEqual(ids.slice(0, 1));
      // Unknown parameters are ignored, as on every list.
      expect(await page('?foo=bar&cursor=x&since=x&limit[]=0&__proto__=1&constructor=x')).toEqual(ids);
      expect(await page('?LIMIT=0&offset=1&Status=bogus')).toEqual(ids.slice(1));
    });

    it.each([
      ['limit=0', 'limit'],
      ['limit=-1', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=1.5', 'limit'],
      ['limit=', 'limit'],
      ['limit=1&limit=2', 'limit'],
      ['offset=-1', 'offset'],
      ['offset=x', 'offset'],
      ['offset=99999999999', 'offset'],
      ['status=bogus', 'status'],
      ['status=SUCCEEDED', 'status'],
      ['status=', 'status'],
      ['status=failed&status=pending', 'status'],
    ])('400 for ?%s', async (query, field) => {
      const receiver = await startReceiver();
      const { api, webhook } = await setupWebhook(t, receiver.url);
      expectBadRequest(await api.get(`/webhooks/${webhook.id}/deliveries?${query}`), field);
    });

    it('filters by status', async () => {
      const { api, webhook, deliveries } = await withDeliveries(3, (req) =>
        JSON.parse(req.body).data.data.n === 1 ? { status: 500 } : { status: 200 },
      );
      const byStatus = async (status: string) =>
        (await listDeliveries(api, webhook.id, `?status=${status}`)).map((d) => d.id);
      const failed = deliveries.filter((d) => d.status === 'failed');
      expect(failed).toHaveLength(1);

      expect(await byStatus('failed')).toEqual(failed.map((d) => d.id));
      expect(await byStatus('succeeded')).toEqual(deliveries.filter((d) => d.status === 'succeeded').map((d) => d.id));
      expect(await byStatus('pending')).toEqual([]);
      expect(await byStatus('cancelled')).toEqual([]);
      expect(await listDeliveries(api, webhook.id, '?status=succeeded&limit=1&offset=1')).toHaveLength(1);
    });

    it('404 for an unknown, removed or other workspace’s webhook; 401 without a key', async () => {
      const mine = await withDeliveries(1);
      const theirs = await withDeliveries(1);
      const removable = await registerWebhook(mine.api, { url: mine.receiver.url, calculators: [mine.calculator.id] });
      await removeWebhook(mine.api, removable.id);

      expectNotFound(await mine.api.get(`/webhooks/${createId()}/deliveries`));
      expectNotFound(await mine.api.get(`/webhooks/${removable.id}/deliveries`));
      expectNotFound(await mine.api.get(`/webhooks/${theirs.webhook.id}/deliveries`));
      expectNotAuthenticated(await t.http().get(`${API}/webhooks/${mine.webhook.id}/deliveries`));
    });
  });

  describe('GET /webhooks/{id}/deliveries/{deliveryId}', () => {
    it('returns the delivery with the payload sent and every attempt', async () => {
      const receiver = await startReceiver((_req, i) =>
        i === 0 ? { status: 503, body: 'warming up' } : { status: 200, body: '{"ok":true}' },
      );
      const { api, calculator, webhook } = await setupWebhook(t, receiver.url);
      const submission = await submit(api, calculator.id, { data: { q: 'a' }, meta: { m: 1 } });
      const { id } = await waitForEndedDelivery(api, webhook.id);

      const res = await api.get(`/webhooks/${webhook.id}/deliveries/${id}`);
      expectJson(res, 200);
      expect(keysOf(res.body)).toEqual(['data']);
      const delivery = res.body.data;
      expect(keysOf(delivery)).toEqual(DELIVERY_DETAIL_KEYS);
      expect(delivery).toMatchObject({
        id,
        webhookId: webhook.id,
        submissionId: submission.id,
        status: 'succeeded',
        attemptCount: 2,
      });
      expect(delivery.payload).toEqual({ webhookId: webhook.id, event: 'newSubmission', data: submission });
      expect(delivery.payload).toEqual(JSON.parse(receiver.requests[1].body));

      expect(delivery.attempts).toHaveLength(2);
      for (const attempt of delivery.attempts) {
        expect(keysOf(attempt)).toEqual(ATTEMPT_KEYS);
        expectTimestamp(attempt.startedAt);
        expect(Number.isInteger(attempt.durationMs) && attempt.durationMs >= 0).toBe(true);
      }
      expect(delivery.attempts).toEqual([
        expect.objectContaining({
          attemptNumber: 1,
          trigger: 'scheduled',
          statusCode: 503,
          succeeded: false,
          responseBody: 'warming up',
          error: 'Receiver answered HTTP 503',
        }),
        expect.objectContaining({
          attemptNumber: 2,
          trigger: 'scheduled',
          statusCode: 200,
          succeeded: true,
          responseBody: '{"ok":true}',
          error: null,
        }),
      ]);
      expect(Date.parse(delivery.attempts[1].startedAt)).toBeGreaterThan(Date.parse(delivery.attempts[0].startedAt));
    });

    it('404 for an unknown delivery, one of another webhook, and anything of another workspace; 401 without key', async () => {
      const mine = await withDeliveries(1);
      const sibling = await registerWebhook(mine.api, { url: mine.receiver.url, calculators: [mine.calculator.id] });
      const theirs = await withDeliveries(1);
      const myDelivery = mine.deliveries[0].id;
      const theirDelivery = theirs.deliveries[0].id;

      for (const [webhookId, deliveryId] of [
        [mine.webhook.id, createId()],
        [mine.webhook.id, 'not-a-delivery!'],
        [mine.webhook.id, '%00'],
        [sibling.id, myDelivery],
        [mine.webhook.id, theirDelivery],
        [theirs.webhook.id, theirDelivery],
      ]) {
        expectNotFound(await mine.api.get(`/webhooks/${webhookId}/deliveries/${deliveryId}`));
      }
      expectNotAuthenticated(await t.http().get(`${API}/webhooks/${mine.webhook.id}/deliveries/${myDelivery}`));
      // The owner still sees it.
      expect((await getDelivery(theirs.api, theirs.webhook.id, theirDelivery)).id).toBe(theirDelivery);
    });
  });

  describe('POST /webhooks/{id}/deliveries/{deliveryId}/retry', () => {
    it('sends a succeeded delivery again with the same webhook-id, logged as a manual attempt', async () => {
      const { api, webhook, secret, receiver, deliveries } = await withDeliveries(1);
      const [original] = deliveries;

      const res = await retry(api, webhook.id, original.id);
      expectJson(res, 202);
      expect(keysOf(res.body)).toEqual(['data']);
      expect(keysOf(res.body.data)).toEqual(DELIVERY_KEYS);
      expect(res.body.data).toMatchObject({ id: original.id, status: 'pending', completedAt: null });

      await waitFor(() => receiver.requests.length === 2, 5000, 'the redelivery');
      const [first, again] = receiver.requests;
      expect(again.headers['webhook-id']).toBe(original.id);
      expect(verifySignature(secret, again)).toEqual(verifySignature(secret, first));
      const delivery = await waitForEndedDelivery(api, webhook.id);
      expect(delivery).toMatchObject({ status: 'succeeded', attemptCount: 2 });
      expect(delivery.attempts.map((a) => [a.attemptNumber, a.trigger, a.succeeded])).toEqual([
        [1, 'scheduled', true],
        [2, 'manual', true],
      ]);
      await expectNoFurtherRequests(receiver);
      expect(receiver.requests).toHaveLength(2);
    });

    it('sends a failed delivery again once its webhook, disabled by the 410, is enabled; it ends succeeded', async () => {
      const { api, webhook, receiver, deliveries } = await withDeliveries(1, (_req, i) =>
        i === 0 ? { status: 410 } : { status: 200 },
      );
      expect(deliveries[0]).toMatchObject({ status: 'failed', attemptCount: 1 });

      expectBadRequest(await retry(api, webhook.id, deliveries[0].id), 'webhookId');
      expectJson(await api.post(`/webhooks/${webhook.id}/enable`), 200);
      expectJson(await retry(api, webhook.id, deliveries[0].id), 202);
      await waitFor(() => receiver.requests.length === 2, 5000, 'the redelivery');
      const delivery = await waitFor(async () => {
        const d = await getDelivery(api, webhook.id, deliveries[0].id);
        return d.status === 'succeeded' ? d : null;
      });
      expect(receiver.requests.map((r) => r.headers['webhook-id'])).toEqual([delivery.id, delivery.id]);
      expect(delivery.attempts.map((a) => [a.trigger, a.statusCode])).toEqual([
        ['scheduled', 410],
        ['manual', 200],
      ]);
      expect(delivery).toMatchObject({ lastStatusCode: 200, nextAttemptAt: null });
    });

    it('makes exactly one more attempt: a failing retry ends failed again', async () => {
      const { api, webhook, receiver, deliveries } = await withDeliveries(1, () => ({ status: 500 }));
      expect(deliveries[0]).toMatchObject({ status: 'failed', attemptCount: FAST_MAX_ATTEMPTS });

      expectJson(await retry(api, webhook.id, deliveries[0].id), 202);
      const delivery = await waitFor(async () => {
        const d = await getDelivery(api, webhook.id, deliveries[0].id);
        return d.status === 'failed' && d.attemptCount === FAST_MAX_ATTEMPTS + 1 ? d : null;
      });
      expect(delivery.attempts.at(-1)).toMatchObject({ trigger: 'manual', statusCode: 500, succeeded: false });
      await expectNoFurtherRequests(receiver);
      expect(receiver.requests).toHaveLength(FAST_MAX_ATTEMPTS + 1);
    });

    it('moves the next attempt of a pending delivery to now, adding no attempt', async () => {
      const receiver = await startReceiver(() => ({ status: 503, headers: { 'retry-after': '60' } }));
      const { api, calculator, webhook } = await setupWebhook(t, receiver.url);
      await submit(api, calculator.id);
      const [pending] = await waitFor(async () => {
        const list = await listDeliveries(api, webhook.id);
        return list[0]?.attemptCount === 1 ? list : null;
      });
      expect(pending.status).toBe('pending');
      expect(Date.parse(pending.nextAttemptAt!)).toBeGreaterThan(Date.now() + 30_000);

      const res = await retry(api, webhook.id, pending.id);
      expectJson(res, 202);
      expect(res.body.data).toMatchObject({ status: 'pending', attemptCount: 1, maxAttempts: pending.maxAttempts });
      await waitFor(() => receiver.requests.length === 2, 5000, 'the attempt moved to now');
      const after = await waitFor(async () => {
        const d = await getDelivery(api, webhook.id, pending.id);
        return d.attemptCount === 2 ? d : null;
      });
      expect(after).toMatchObject({ status: 'pending', maxAttempts: pending.maxAttempts });
    });

    it('a second retry while the first is still pending adds no attempt', async () => {
      const { api, webhook, receiver, deliveries } = await withDeliveries(1, (_req, i) =>
        i === 0 ? { status: 200 } : { status: 200, delayMs: 500 },
      );
      expectJson(await retry(api, webhook.id, deliveries[0].id), 202);
      const second = await retry(api, webhook.id, deliveries[0].id);
      expectJson(second, 202);
      expect(second.body.data).toMatchObject({ status: 'pending', maxAttempts: 2 });
      const delivery = await waitForEndedDelivery(api, webhook.id);
      expect(delivery).toMatchObject({ status: 'succeeded', attemptCount: 2, maxAttempts: 2 });
      await expectNoFurtherRequests(receiver);
      expect(receiver.requests).toHaveLength(2);
    });

    it('404 for an unknown delivery, another workspace’s, or a removed webhook’s; 401 without key', async () => {
      const mine = await withDeliveries(1);
      const theirs = await withDeliveries(1);
      const myDelivery: DeliveryResponse = mine.deliveries[0];

      expectNotFound(await retry(mine.api, mine.webhook.id, createId()));
      expectNotFound(await retry(mine.api, mine.webhook.id, 'nope'));
      expectNotFound(await retry(mine.api, mine.webhook.id, theirs.deliveries[0].id));
      expectNotFound(await retry(mine.api, theirs.webhook.id, theirs.deliveries[0].id));
      expectNotAuthenticated(
        await t.http().post(`${API}/webhooks/${mine.webhook.id}/deliveries/${myDelivery.id}/retry`),
      );
      await removeWebhook(mine.api, mine.webhook.id);
      expectNotFound(await retry(mine.api, mine.webhook.id, myDelivery.id));

      await expectNoFurtherRequests(mine.receiver, theirs.receiver);
      expect(mine.receiver.requests).toHaveLength(1);
      expect(theirs.receiver.requests).toHaveLength(1);
    });
  });
});
