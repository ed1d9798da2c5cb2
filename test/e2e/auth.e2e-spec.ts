import { generateApiKey, prefixOf } from '../../src/auth/api-key.js';
import { ApiKeysService } from '../../src/auth/api-keys.service.js';
import {
  API,
  client,
  expectJson,
  expectNotAuthenticated,
  listWebhooks,
  registerWebhook,
  webhookRowCount,
} from '../support/management-api.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

describe('authentication', () => {
  let t: TestApp;
  let key: string;
  let workspaceId: string;
  let webhookId: string;
  let body: { url: string; calculators: string[] };

  beforeAll(async () => {
    t = await createTestApp();
    const ws = await createWorkspace(t);
    key = ws.key;
    workspaceId = ws.workspace.id;
    const calc = await createCalculator(t, workspaceId);
    body = { url: 'https://receiver.example.com/h', calculators: [calc.id] };
    webhookId = (await registerWebhook(client(t, key), body)).id;
  });
  afterAll(() => t.close());

  /** All seven operations, each with a request that succeeds given a valid key. */
  const operations = [
    ['GET /webhooks', (k?: string) => send('get', '/webhooks', k)],
    ['POST /webhooks', (k?: string) => send('post', '/webhooks', k).send(body)],
    ['GET /webhooks/{id}', (k?: string) => send('get', `/webhooks/${webhookId}`, k)],
    ['DELETE /webhooks/{id}', (k?: string) => send('delete', `/webhooks/${webhookId}`, k)],
    ['GET /webhooks/{id}/secret', (k?: string) => send('get', `/webhooks/${webhookId}/secret`, k)],
    ['GET /calculators', (k?: string) => send('get', '/calculators', k)],
    ['GET /me', (k?: string) => send('get', '/me', k)],
  ] as const;

  function send(method: 'get' | 'post' | 'delete', path: string, apiKey?: string) {
    const req = t.http()[method](API + path);
    return apiKey === undefined ? req : req.set('x-ac-api-key', apiKey);
  }

  /** A refused request changes nothing: the webhook is still there and no other was added. */
  async function expectRefused(operation: (typeof operations)[number][1], apiKey?: string) {
    const rowsBefore = await webhookRowCount(t, workspaceId);
    expectNotAuthenticated(await operation(apiKey));
    expect(await webhookRowCount(t, workspaceId)).toBe(rowsBefore);
    expect((await listWebhooks(client(t, key))).map((w) => w.id)).toEqual([webhookId]);
  }

  describe.each(operations)('%s', (_name, operation) => {
    it('refuses a request without a key with 401', async () => {
      await expectRefused(operation);
    });

    it('refuses an empty key with 401', async () => {
      await expectRefused(operation, '');
    });

    it('refuses a well-formed key that was never issued with 401', async () => {
      await expectRefused(operation, generateApiKey().key);
    });

    it('refuses a malformed key with 401', async () => {
      await expectRefused(operation, 'not-a-key');
    });

    it('refuses a known key that has been altered with 401', async () => {
      await expectRefused(operation, `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`);
    });

    it('refuses a revoked key with 401', async () => {
      const { key: revoked } = await t.app.get(ApiKeysService).issue(workspaceId);
      expectJson(await send('get', '/me', revoked), 200);
      expect(await t.app.get(ApiKeysService).revoke(workspaceId, prefixOf(revoked))).not.toBeNull();
      await expectRefused(operation, revoked);
    });
  });

  it('does not take the key from the Authorization header or the query string', async () => {
    expectNotAuthenticated(await t.http().get(`${API}/me`).set('authorization', `Bearer ${key}`));
    expectNotAuthenticated(await t.http().get(`${API}/me?x-ac-api-key=${encodeURIComponent(key)}`));
  });

  it('keeps the other keys of a workspace working when one is revoked', async () => {
    const keys = t.app.get(ApiKeysService);
    const { key: second } = await keys.issue(workspaceId);
    await keys.revoke(workspaceId, prefixOf(second));
    expectNotAuthenticated(await send('get', '/me', second));
    expectJson(await send('get', '/me', key), 200);
  });
});
