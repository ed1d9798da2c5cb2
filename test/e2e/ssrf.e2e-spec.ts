import { Receiver, sleep, waitFor } from '../support/receiver.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

describe('SSRF guard (WEBHOOK_ALLOW_PRIVATE_TARGETS=false)', () => {
  let t: TestApp;
  let receiver: Receiver;
  beforeAll(async () => {
    t = await createTestApp({
      WORKER_ENABLED: 'true',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false',
      DELIVERY_RETRY_SCHEDULE: '50ms',
      DELIVERY_TIMEOUT_MS: '1000',
    });
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    await receiver.close();
    await t.close();
  });

  it.each([
    [
      'a private IP literal',
      (port: string) => `http://127.0.0.1:${port}/hook`,
      /127\.0\.0\.1 is not publicly routable/,
    ],
    [
      'a host name resolving to loopback',
      (port: string) => `http://localhost:${port}/hook`,
      /localhost resolves to non-public address/,
    ],
    [
      'an IPv4-mapped IPv6 literal',
      (port: string) => `http://[::ffff:127.0.0.1]:${port}/hook`,
      /not publicly routable/,
    ],
  ])('refuses %s at send time: failed attempts with a clear error, nothing sent', async (_name, url, error) => {
    const { workspace, key } = await createWorkspace(t);
    const calc = await createCalculator(t, workspace.id);
    const port = new URL(receiver.url).port;
    const hook = await t
      .http()
      .post('/api/v1/webhooks')
      .set('x-ac-api-key', key)
      .send({ url: url(port), calculators: [calc.id] })
      .expect(200);
    await t
      .http()
      .post(`/api/v1/calculators/${calc.id}/submissions`)
      .set('x-ac-api-key', key)
      .send({ data: {} })
      .expect(200);
    const list = await waitFor(async () => {
      const res = await t.http().get(`/api/v1/webhooks/${hook.body.data.id}/deliveries`).set('x-ac-api-key', key);
      return res.body.data[0]?.status === 'failed' ? res.body.data : null;
    });
    const detail = await t
      .http()
      .get(`/api/v1/webhooks/${hook.body.data.id}/deliveries/${list[0].id}`)
      .set('x-ac-api-key', key)
      .expect(200);
    expect(detail.body.data.attempts).toHaveLength(2);
    for (const attempt of detail.body.data.attempts) {
      expect(attempt.statusCode).toBeNull();
      expect(attempt.error).toMatch(error);
    }
    await sleep(100);
    expect(receiver.requests).toHaveLength(0);
  });
});
