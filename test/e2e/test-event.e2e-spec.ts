import { isCuid2 } from '../../src/core/ids.js';
import {
  countRows,
  DELIVERY_KEYS,
  getDelivery,
  listDeliveries,
  setupWebhook,
  SUBMISSION_KEYS,
  useFastDeliveryApp,
  verifySignature,
} from '../support/delivery.js';
import { snapshotDatabase } from '../support/hostile-input.js';
import {
  client,
  expectBadRequest,
  expectJson,
  expectNotFound,
  keysOf,
  registerWebhook,
  removeWebhook,
} from '../support/management-api.js';
import { waitFor } from '../support/receiver.js';
import { createCalculator, createWorkspace } from '../support/test-app.js';

describe('POST /webhooks/{id}/test', () => {
  const env = useFastDeliveryApp();

  const calculatorCounters = async (calculatorId: string) =>
    (
      await env.t.dataSource.query(
        `SELECT coalesce(sum(count), 0)::int AS count, max(last_submission_at) AS last_submission_at
         FROM calculator_submission_counters WHERE calculator_id = $1`,
        [calculatorId],
      )
    )[0];

  it('sends a signed sample submission (meta.test) of one of its calculators; nothing is stored', async () => {
    const receiver = await env.startReceiver();
    const { api, webhook, workspace, calculator, secret } = await setupWebhook(env.t, receiver.url);
    const counters = await calculatorCounters(calculator.id);
    const res = await api.post(`/webhooks/${webhook.id}/test`);
    expectJson(res, 202);
    expect(keysOf(res.body)).toEqual(['data']);
    expect(keysOf(res.body.data)).toEqual(DELIVERY_KEYS);
    expect(res.body.data).toMatchObject({ webhookId: webhook.id, submissionId: null, status: 'pending' });

    await waitFor(() => receiver.requests.length === 1, 5000, 'the test event');
    const [request] = receiver.requests;
    expect(request.headers['webhook-id']).toBe(res.body.data.id);
    const payload = verifySignature(secret, request) as {
      webhookId: string;
      event: string;
      data: Record<string, unknown>;
    };
    expect(payload).toMatchObject({ webhookId: webhook.id, event: 'newSubmission' });
    expect(keysOf(payload.data)).toEqual(SUBMISSION_KEYS);
    expect(payload.data).toMatchObject({ calculatorId: calculator.id, finished: true, meta: { test: true } });
    expect(isCuid2(payload.data.id)).toBe(true);
    expect(Object.keys(payload.data.data as object).length).toBeGreaterThan(0);

    const logged = await waitFor(async () => {
      const d = await getDelivery(api, webhook.id, res.body.data.id);
      return d.status === 'succeeded' ? d : null;
    });
    expect(logged.payload).toEqual(payload);
    expect(logged.attempts).toHaveLength(1);
    expect(await countRows(env.t, 'submissions', workspace.id)).toBe(0);
    expect(await calculatorCounters(calculator.id)).toEqual(counters);
  });

  it('is retried like any other delivery, with the same webhook-id and body', async () => {
    const receiver = await env.startReceiver((_, i) => ({ status: i === 0 ? 500 : 200 }));
    const { workspace, key } = await createWorkspace(env.t);
    const api = client(env.t, key);
    const calculators = [await createCalculator(env.t, workspace.id), await createCalculator(env.t, workspace.id)];
    const webhook = await registerWebhook(api, { url: receiver.url, calculators: calculators.map((c) => c.id) });
    const res = await api.post(`/webhooks/${webhook.id}/test`);
    expectJson(res, 202);
    const done = await waitFor(async () => {
      const d = await getDelivery(api, webhook.id, res.body.data.id);
      return d.status === 'succeeded' ? d : null;
    });
    expect(done.attempts.map((a) => a.succeeded)).toEqual([false, true]);
    const [first, second] = receiver.requests;
    expect(second.headers['webhook-id']).toBe(first.headers['webhook-id']);
    expect(second.body).toBe(first.body);
    expect(calculators.map((c) => c.id)).toContain(JSON.parse(first.body).data.calculatorId);
    expect(await listDeliveries(api, webhook.id)).toHaveLength(1);
  });

  it('is a 400 on a disabled webhook, and for any body field; neither changes anything', async () => {
    const receiver = await env.startReceiver();
    const { api, webhook } = await setupWebhook(env.t, receiver.url);
    const snapshot = await snapshotDatabase(env.t);
    expectBadRequest(await api.post(`/webhooks/${webhook.id}/test`, { event: 'x' }), 'event');
    expect(await snapshotDatabase(env.t)).toEqual(snapshot);
    expectJson(await api.post(`/webhooks/${webhook.id}/disable`), 200);
    const disabled = await snapshotDatabase(env.t);
    expectBadRequest(await api.post(`/webhooks/${webhook.id}/test`), 'webhookId');
    expect(await snapshotDatabase(env.t)).toEqual(disabled);
    expect(receiver.requests).toHaveLength(0);
  });

  it("is a 404 for another workspace's webhook and a removed one", async () => {
    const { webhook } = await setupWebhook(env.t, 'https://example.com/other');
    const { key } = await createWorkspace(env.t);
    expectNotFound(await client(env.t, key).post(`/webhooks/${webhook.id}/test`));
    const mine = await setupWebhook(env.t, 'https://example.com/mine');
    await removeWebhook(mine.api, mine.webhook.id);
    expectNotFound(await mine.api.post(`/webhooks/${mine.webhook.id}/test`));
  });
});
