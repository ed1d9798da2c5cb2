import { Webhook } from 'standardwebhooks';
import { setupWebhook, submit, useFastDeliveryApp } from '../support/delivery.js';
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
import { untilClock, waitFor, type ReceivedRequest } from '../support/receiver.js';
import { createWorkspace } from '../support/test-app.js';

interface SecretAnswer {
  key: string;
  previousKeyExpiresAt: string | null;
}

async function rotate(api: Client, webhookId: string, body?: object): Promise<SecretAnswer> {
  const res = await api.post(`/webhooks/${webhookId}/secret/rotate`, body);
  expectJson(res, 200);
  expect(keysOf(res.body)).toEqual(['data']);
  expect(keysOf(res.body.data)).toEqual(['key', 'previousKeyExpiresAt']);
  expect(res.body.data.key).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
  return res.body.data as SecretAnswer;
}

async function getSecret(api: Client, webhookId: string): Promise<SecretAnswer> {
  const res = await api.get(`/webhooks/${webhookId}/secret`);
  expectJson(res, 200);
  expect(keysOf(res.body.data)).toEqual(['key', 'previousKeyExpiresAt']);
  return res.body.data as SecretAnswer;
}

/** Whether a receiver that knows only `key` accepts the request (standardwebhooks checks every entry). */
const accepts = (key: string, request: ReceivedRequest): boolean => {
  try {
    new Webhook(key).verify(request.body, request.headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
};

const signatures = (request: ReceivedRequest) => String(request.headers['webhook-signature']).split(' ');

describe('POST /webhooks/{id}/secret/rotate', () => {
  const env = useFastDeliveryApp();

  /** A webhook on a receiver; `deliver` submits once and returns the request that arrived. */
  async function setup() {
    const receiver = await env.startReceiver();
    const setup = await setupWebhook(env.t, receiver.url);
    const deliver = async () => {
      const seen = receiver.requests.length;
      await submit(setup.api, setup.calculator.id);
      await waitFor(() => receiver.requests.length > seen, 5000, 'a delivery');
      return receiver.requests[seen];
    };
    return { ...setup, deliver };
  }

  it('signs every attempt with the new and the previous key during the overlap (default one day)', async () => {
    const { api, webhook, secret, deliver } = await setup();
    expect(await getSecret(api, webhook.id)).toEqual({ key: secret, previousKeyExpiresAt: null });
    const before = Date.now();
    const rotated = await rotate(api, webhook.id);
    expect(rotated.key).not.toBe(secret);
    expectTimestamp(rotated.previousKeyExpiresAt);
    const expires = new Date(rotated.previousKeyExpiresAt!).getTime();
    expect(expires).toBeGreaterThanOrEqual(before + 86_400_000 - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 86_400_000 + 1000);
    expect(await getSecret(api, webhook.id)).toEqual(rotated);

    const request = await deliver();
    expect(signatures(request)).toHaveLength(2);
    expect(signatures(request).every((s) => s.startsWith('v1,'))).toBe(true);
    expect(accepts(rotated.key, request)).toBe(true);
    expect(accepts(secret, request)).toBe(true);
    // The first entry is the new key's.
    const firstOnly = { ...request, headers: { ...request.headers, 'webhook-signature': signatures(request)[0] } };
    expect(accepts(rotated.key, firstOnly)).toBe(true);
    expect(accepts(secret, firstOnly)).toBe(false);
  });

  it('sends one signature, by the new key, once the overlap has expired', async () => {
    const { api, webhook, secret, deliver } = await setup();
    const rotated = await rotate(api, webhook.id, { overlapSeconds: 1 });
    expect(new Date(rotated.previousKeyExpiresAt!).getTime()).toBeLessThanOrEqual(Date.now() + 1000);
    expect(signatures(await deliver())).toHaveLength(2);
    await untilClock(Date.parse(rotated.previousKeyExpiresAt!)); // the overlap has expired
    expect(await getSecret(api, webhook.id)).toEqual({ key: rotated.key, previousKeyExpiresAt: null });
    const request = await deliver();
    expect(signatures(request)).toHaveLength(1);
    expect(accepts(rotated.key, request)).toBe(true);
    expect(accepts(secret, request)).toBe(false);
  });

  it('with overlapSeconds 0 the previous key stops signing at once', async () => {
    const { api, webhook, secret, deliver } = await setup();
    const rotated = await rotate(api, webhook.id, { overlapSeconds: 0 });
    expect(rotated.previousKeyExpiresAt).toBeNull();
    const request = await deliver();
    expect(signatures(request)).toHaveLength(1);
    expect(accepts(rotated.key, request)).toBe(true);
    expect(accepts(secret, request)).toBe(false);
  });

  it('a second rotation during an overlap keeps only the newest previous key', async () => {
    const { api, webhook, secret, deliver } = await setup();
    const first = await rotate(api, webhook.id, { overlapSeconds: 600 });
    const second = await rotate(api, webhook.id, { overlapSeconds: 604800 });
    expect(new Set([secret, first.key, second.key]).size).toBe(3);
    const request = await deliver();
    expect(signatures(request)).toHaveLength(2);
    expect(accepts(second.key, request)).toBe(true);
    expect(accepts(first.key, request)).toBe(true);
    expect(accepts(secret, request)).toBe(false);
  });

  it('refuses a bad overlapSeconds or an unknown field with a 400 naming it, changing nothing', async () => {
    const { api, webhook, secret } = await setup();
    const snapshot = await snapshotDatabase(env.t);
    for (const overlapSeconds of [-1, 604801, 1.5, '10', null, true]) {
      expectBadRequest(await api.post(`/webhooks/${webhook.id}/secret/rotate`, { overlapSeconds }), 'overlapSeconds');
    }
    expectBadRequest(await api.post(`/webhooks/${webhook.id}/secret/rotate`, { overlap: 5 }), 'overlap');
    expect(await snapshotDatabase(env.t)).toEqual(snapshot);
    expect((await getSecret(api, webhook.id)).key).toBe(secret);
  });

  it("is a 404 for another workspace's webhook and a removed one, changing nothing", async () => {
    const { webhook, secret, api } = await setup();
    const { key } = await createWorkspace(env.t);
    expectNotFound(await client(env.t, key).post(`/webhooks/${webhook.id}/secret/rotate`, {}));
    expect((await getSecret(api, webhook.id)).key).toBe(secret);
    await removeWebhook(api, webhook.id);
    expectNotFound(await api.post(`/webhooks/${webhook.id}/secret/rotate`));
  });
});
