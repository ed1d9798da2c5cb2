import { destinationOf, drainJobId, HostWakes } from '../../src/delivery/host-wakes.js';
import { USER_AGENT } from '../../src/delivery/engine/webhook-sender.js';
import {
  expectNoFurtherRequests,
  listDeliveries,
  setupWebhook,
  SUBMISSION_KEYS,
  submit,
  useFastDeliveryApp,
  verifySignature,
  waitForEndedDelivery,
} from '../support/delivery.js';
import { client, keysOf, registerWebhook, signingSecret } from '../support/management-api.js';
import { waitFor } from '../support/receiver.js';
import { createCalculator, createWorkspace, type TestApp } from '../support/test-app.js';

describe('webhook delivery', () => {
  const env = useFastDeliveryApp();
  const { startReceiver } = env;
  let t: TestApp;
  beforeAll(() => {
    t = env.t;
  });

  describe('on success', () => {
    it('POSTs the submission once, with the documented body and headers, signed', async () => {
      const receiver = await startReceiver();
      const { api, calculator, webhook, secret } = await setupWebhook(t, receiver.url);
      const submission = await submit(api, calculator.id, {
        data: { answer: 42, text: 'héllo 😀', nested: { list: [1, 'two', null, true] } },
        finished: false,
        meta: { source: 'e2e' },
      });

      await waitFor(() => receiver.requests.length === 1, 5000, 'the POST');
      const [request] = receiver.requests;
      expect(request.method).toBe('POST');
      expect(request.path).toBe('/hook');
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.headers['user-agent']).toBe(USER_AGENT);
      expect(Math.abs(Number(request.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(30);
      expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);

      const payload = verifySignature(secret, request) as { data: object };
      expect(keysOf(payload)).toEqual(['data', 'event', 'webhookId']);
      expect(keysOf(payload.data)).toEqual(SUBMISSION_KEYS);
      expect(payload).toEqual({
        webhookId: webhook.id,
        event: 'newSubmission',
        data: {
          id: submission.id,
          createdAt: submission.createdAt,
          updatedAt: submission.updatedAt,
          calculatorId: calculator.id,
          finished: false,
          data: { answer: 42, text: 'héllo 😀', nested: { list: [1, 'two', null, true] } },
          meta: { source: 'e2e' },
        },
      });

      const delivery = await waitForEndedDelivery(api, webhook.id);
      expect(request.headers['webhook-id']).toBe(delivery.id);
      expect(delivery).toMatchObject({ status: 'succeeded', attemptCount: 1, lastStatusCode: 200, lastError: null });
      expect(delivery.attempts).toEqual([
        expect.objectContaining({ attemptNumber: 1, trigger: 'scheduled', statusCode: 200, succeeded: true }),
      ]);

      await expectNoFurtherRequests(receiver);
      expect(receiver.requests).toHaveLength(1);
    });

    it('does not call a webhook bound to another calculator of the workspace', async () => {
      const called = await startReceiver();
      const other = await startReceiver();
      const { api, workspace, calculator, webhook } = await setupWebhook(t, called.url);
      const otherCalculator = await createCalculator(t, workspace.id, 'Other');
      const otherWebhook = await registerWebhook(api, { url: other.url, calculators: [otherCalculator.id] });

      await submit(api, calculator.id);
      await waitForEndedDelivery(api, webhook.id);
      await expectNoFurtherRequests(called, other);
      expect(called.requests).toHaveLength(1);
      expect(other.requests).toHaveLength(0);
      expect(await listDeliveries(api, otherWebhook.id)).toEqual([]);
    });

    it('fans out to every webhook of the calculator: one POST each, distinct webhook-ids', async () => {
      const [a, b, c] = await Promise.all([startReceiver(), startReceiver(), startReceiver()]);
      const first = await setupWebhook(t, a.url);
      const { api, calculator } = first;
      const hooks = [first.webhook];
      const secrets = [first.secret];
      for (const receiver of [b, c]) {
        const webhook = await registerWebhook(api, { url: receiver.url, calculators: [calculator.id] });
        hooks.push(webhook);
        secrets.push(await signingSecret(api, webhook.id));
      }

      const submission = await submit(api, calculator.id);
      await waitFor(() => [a, b, c].every((r) => r.requests.length === 1), 5000, 'one POST to each receiver');
      const deliveries = await Promise.all(hooks.map((h) => waitForEndedDelivery(api, h.id)));
      await expectNoFurtherRequests(a, b, c);

      [a, b, c].forEach((receiver, i) => {
        expect(receiver.requests).toHaveLength(1);
        const [request] = receiver.requests;
        expect(verifySignature(secrets[i], request)).toMatchObject({
          webhookId: hooks[i].id,
          data: { id: submission.id },
        });
        expect(request.headers['webhook-id']).toBe(deliveries[i].id);
        expect(deliveries[i]).toMatchObject({ status: 'succeeded', submissionId: submission.id });
      });
      expect(new Set(deliveries.map((d) => d.id)).size).toBe(3);
    });

    it('delivers the submissions of every calculator a webhook is bound to', async () => {
      const receiver = await startReceiver();
      const { workspace, key } = await createWorkspace(t);
      const api = client(t, key);
      const [calculator, second] = [await createCalculator(t, workspace.id), await createCalculator(t, workspace.id)];
      const webhook = await registerWebhook(api, { url: receiver.url, calculators: [calculator.id, second.id] });

      const subs = [await submit(api, calculator.id), await submit(api, second.id)];
      await waitFor(() => receiver.requests.length === 2, 5000, 'two POSTs');
      await expectNoFurtherRequests(receiver);
      expect(receiver.requests).toHaveLength(2);
      const delivered = receiver.requests.map((r) => (JSON.parse(r.body) as { data: { id: string } }).data.id);
      expect(delivered.sort()).toEqual(subs.map((s) => s.id).sort());
      expect(receiver.requests.every((r) => JSON.parse(r.body).webhookId === webhook.id)).toBe(true);
    });
  });

  describe("when Redis loses the host's wake", () => {
    it('wakes the host of a due delivery again (sweeper) and delivers it once', async () => {
      const receiver = await startReceiver();
      const queue = t.app.get(HostWakes).queues[0];
      const wake = drainJobId(destinationOf(receiver.url));
      const { api, workspace, calculator, webhook } = await setupWebhook(t, receiver.url);
      await queue.pause();
      let deliveryId: string;
      try {
        await submit(api, calculator.id);
        [{ id: deliveryId }] = await t.dataSource.query('SELECT id FROM deliveries WHERE workspace_id = $1', [
          workspace.id,
        ]);
        // The crash between commit and wake, or Redis restarted empty: the wake is gone.
        expect(await queue.getJob(wake)).toBeTruthy();
        await queue.remove(wake);
        expect(await queue.getJob(wake)).toBeUndefined();
      } finally {
        await queue.resume();
      }

      await waitFor(() => receiver.requests.length === 1, 5000, 'the swept delivery');
      const delivery = await waitForEndedDelivery(api, webhook.id);
      expect(delivery).toMatchObject({ id: deliveryId, status: 'succeeded', attemptCount: 1 });
      expect(receiver.requests[0].headers['webhook-id']).toBe(deliveryId);
      await expectNoFurtherRequests(receiver);
      expect(receiver.requests).toHaveLength(1);
    });

    it("wakes a host whose wake for a scheduled retry was lost, keeping the delivery's attempt count", async () => {
      const receiver = await startReceiver((_req, i) =>
        i === 0 ? { status: 503, headers: { 'retry-after': '2' } } : { status: 200 },
      );
      const queue = t.app.get(HostWakes).queues[0];
      const wake = drainJobId(destinationOf(receiver.url));
      const { api, workspace, calculator, webhook } = await setupWebhook(t, receiver.url);
      await submit(api, calculator.id);
      const [{ id: deliveryId }] = await t.dataSource.query('SELECT id FROM deliveries WHERE workspace_id = $1', [
        workspace.id,
      ]);
      const recorded = async () =>
        (await t.dataSource.query('SELECT attempt_count FROM deliveries WHERE id = $1', [deliveryId]))[0]
          .attempt_count === 1;
      await waitFor(recorded, 5000, 'the first attempt recorded');
      await waitFor(async () => (await queue.getJobState(wake)) === 'delayed', 5000, 'the wake for the retry');
      // A retry recorded after its drain left wakes the host itself, one Redis call after its commit: a
      // wake still absent 250 ms (ten polls) after its removal is lost, not about to be added back.
      await waitFor(
        async () => {
          await queue.remove(wake);
          await new Promise((resolve) => setTimeout(resolve, 250));
          return (await queue.getJob(wake)) === undefined;
        },
        5000,
        'the wake removed for good',
      );
      expect(await queue.getJob(wake)).toBeUndefined();

      const delivery = await waitForEndedDelivery(api, webhook.id, 10_000);
      expect(delivery).toMatchObject({ status: 'succeeded', attemptCount: 2 });
      expect(delivery.attempts.map((a) => a.statusCode)).toEqual([503, 200]);
      expect(receiver.requests.map((r) => r.headers['webhook-id'])).toEqual([deliveryId, deliveryId]);
      expect(receiver.requests[1].receivedAt - receiver.requests[0].receivedAt).toBeGreaterThanOrEqual(1900);
    });
  });
});
