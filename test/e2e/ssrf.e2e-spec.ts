import type { LookupAddress } from 'node:dns';
import type { Resolver } from '../../src/delivery/engine/ssrf-guard.js';
import { SSRF_RESOLVER } from '../../src/delivery/engine/webhook-sender.js';
import { expectNothingFor, Receiver, waitFor } from '../support/receiver.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

// Names the registration lets through (only their addresses are forbidden), resolved by an injected resolver.
const DNS: Record<string, LookupAddress[]> = {
  'rebind.test': [{ address: '127.0.0.1', family: 4 }],
  'compatible.test': [{ address: '::10.0.0.5', family: 6 }],
};
const resolver: Resolver = (hostname, callback) =>
  DNS[hostname] ? callback(null, DNS[hostname]) : callback(new Error(`getaddrinfo ENOTFOUND ${hostname}`), []);

describe('SSRF guard (WEBHOOK_ALLOW_PRIVATE_TARGETS=false)', () => {
  let t: TestApp;
  let receiver: Receiver;
  beforeAll(async () => {
    t = await createTestApp(
      {
        WORKER_ENABLED: 'true',
        WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false',
        // Two attempts at most, 50 ms apart: a refusal that was retried would show a second one.
        DELIVERY_RETRY_SCHEDULE: '50ms',
        DELIVERY_TIMEOUT_MS: '1000',
      },
      (builder) => builder.overrideProvider(SSRF_RESOLVER).useValue(resolver),
    );
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    await receiver.close();
    await t.close();
  });

  it.each([
    [
      'a host name resolving to loopback',
      (port: string) => `http://rebind.test:${port}/hook`,
      'Destination rebind.test (127.0.0.1) refused by the SSRF guard: loopback 127.0.0.0/8',
    ],
    [
      'a host name resolving to an IPv4-compatible IPv6 of a private address',
      (port: string) => `http://compatible.test:${port}/hook`,
      'Destination compatible.test (::10.0.0.5) refused by the SSRF guard: ' +
        'IPv4-compatible IPv6 embedding private-use 10.0.0.0/8',
    ],
  ])(
    'refuses %s at send time: one attempt, delivery failed, error naming the rule, nothing sent',
    async (_name, url, error) => {
      const { webhookId, key } = await registerAndSubmit(url(port()));
      await expectFailedAtOnce(webhookId, key, error);
    },
  );

  it('refuses at send time an IP literal stored before the guard was on, naming the rule', async () => {
    const { webhookId, key } = await registerAndSubmit(`http://rebind.test:${port()}/hook`, async (id) => {
      // Registration refuses this URL now; a webhook registered while the guard was off may still hold one.
      await t.dataSource.query('UPDATE webhooks SET url = $2 WHERE id = $1', [
        id,
        `http://[::ffff:0:7f00:1]:${port()}/hook`,
      ]);
    });
    await expectFailedAtOnce(
      webhookId,
      key,
      'Destination ::ffff:0:7f00:1 refused by the SSRF guard: IPv4-translated IPv6 embedding loopback 127.0.0.0/8',
    );
  });

  const port = () => new URL(receiver.url).port;

  async function registerAndSubmit(url: string, beforeSubmit: (webhookId: string) => Promise<void> = async () => {}) {
    const { workspace, key } = await createWorkspace(t);
    const calc = await createCalculator(t, workspace.id);
    const hook = await t
      .http()
      .post('/api/v1/webhooks')
      .set('x-ac-api-key', key)
      .send({ url, calculators: [calc.id] })
      .expect(200);
    await beforeSubmit(hook.body.data.id);
    await t
      .http()
      .post(`/api/v1/calculators/${calc.id}/submissions`)
      .set('x-ac-api-key', key)
      .send({ data: {} })
      .expect(200);
    return { webhookId: hook.body.data.id as string, key };
  }

  async function expectFailedAtOnce(webhookId: string, key: string, error: string) {
    const [delivery] = await waitFor(async () => {
      const res = await t.http().get(`/api/v1/webhooks/${webhookId}/deliveries`).set('x-ac-api-key', key);
      return res.body.data[0]?.status === 'failed' ? res.body.data : null;
    });
    // Six times the 50 ms retry delay: a second attempt, had one been scheduled, would show in it.
    await expectNothingFor(300, 'second attempt', async () => {
      const [{ n }] = await t.dataSource.query(
        'SELECT count(*)::int AS n FROM delivery_attempts WHERE delivery_id = $1',
        [delivery.id],
      );
      return n > 1 || receiver.requests.length > 0;
    });
    const detail = await t
      .http()
      .get(`/api/v1/webhooks/${webhookId}/deliveries/${delivery.id}`)
      .set('x-ac-api-key', key)
      .expect(200);
    expect(detail.body.data.status).toBe('failed');
    expect(detail.body.data.attempts).toHaveLength(1);
    expect(detail.body.data.attempts[0]).toMatchObject({ statusCode: null, error });
    expect(receiver.requests).toHaveLength(0);
  }
});
