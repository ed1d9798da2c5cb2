import { Webhook } from 'standardwebhooks';
import { Receiver, waitFor } from '../support/receiver.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

describe('webhook delivery', () => {
  let t: TestApp;
  let receiver: Receiver;
  beforeAll(async () => {
    t = await createTestApp({
      WORKER_ENABLED: 'true',
      DELIVERY_RETRY_SCHEDULE: '100ms,200ms',
      DELIVERY_TIMEOUT_MS: '1000',
      SWEEP_INTERVAL_MS: '200',
    });
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    await receiver.close();
    await t.close();
  });

  it('delivers a submission once, signed', async () => {
    const { workspace, key } = await createWorkspace(t);
    const calc = await createCalculator(t, workspace.id);
    const hook = await t
      .http()
      .post('/api/v1/webhooks')
      .set('x-ac-api-key', key)
      .send({ url: receiver.url, calculators: [calc.id] })
      .expect(200);
    const secret = (
      await t.http().get(`/api/v1/webhooks/${hook.body.data.id}/secret`).set('x-ac-api-key', key).expect(200)
    ).body.data.key;
    const sub = await t
      .http()
      .post(`/api/v1/calculators/${calc.id}/submissions`)
      .set('x-ac-api-key', key)
      .send({ data: { a: 1 } })
      .expect(200);
    await waitFor(() => receiver.requests.length === 1, 5000, 'delivery');
    const req = receiver.requests[0];
    const payload = new Webhook(secret).verify(req.body, req.headers as Record<string, string>);
    expect(payload).toEqual({ webhookId: hook.body.data.id, event: 'newSubmission', data: sub.body.data });
    const log = await waitFor(async () => {
      const r = await t
        .http()
        .get(`/api/v1/webhooks/${hook.body.data.id}/deliveries`)
        .set('x-ac-api-key', key)
        .expect(200);
      return r.body.data[0]?.status === 'succeeded' ? r.body.data : null;
    });
    expect(log).toHaveLength(1);
    expect(req.headers['webhook-id']).toBe(log[0].id);
  });
});
