import { generateApiKey, hashApiKey, prefixOf } from '../../src/auth/api-key.js';
import { ApiKeyCache } from '../../src/auth/api-key-cache.js';
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
import { waitFor } from '../support/receiver.js';
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

  describe('key cache', () => {
    const cache = () => t.app.get(ApiKeyCache);
    // Revoked the way an operator or another process would: in SQL, on another connection.
    const revokeInSql = (apiKey: string) =>
      t.dataSource.query(`UPDATE api_keys SET revoked_at = now() WHERE key_hash = $1`, [hashApiKey(apiKey)]);

    it('serves a key it has seen from memory', async () => {
      const { key: cached } = await t.app.get(ApiKeysService).issue(workspaceId);
      expectJson(await send('get', '/me', cached), 200);
      await waitFor(() => cache().isListening, 5_000, 'the LISTEN connection');
      expectJson(await send('get', '/me', cached), 200);
      expect(cache().get(hashApiKey(cached))?.workspace.id).toBe(workspaceId);
    });

    it('refuses a cached key within a second of its revocation by another process', async () => {
      const { key: cached } = await t.app.get(ApiKeysService).issue(workspaceId);
      await waitFor(() => cache().isListening, 5_000, 'the LISTEN connection');
      expectJson(await send('get', '/me', cached), 200);
      expect(cache().get(hashApiKey(cached))).toBeDefined();
      await revokeInSql(cached);
      await waitFor(async () => (await send('get', '/me', cached)).status === 401, 1_000, 'the 401');
      expect(cache().get(hashApiKey(cached))).toBeUndefined();
    });

    it('stops answering while it cannot hear revocations, and resumes when it can', async () => {
      const { key: cached } = await t.app.get(ApiKeysService).issue(workspaceId);
      await waitFor(() => cache().isListening, 5_000, 'the LISTEN connection');
      expectJson(await send('get', '/me', cached), 200);
      await t.dataSource.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND query = 'LISTEN api_key_revoked'`,
      );
      await waitFor(() => !cache().isListening, 5_000, 'the lost connection');
      await revokeInSql(cached); // its NOTIFY reaches no one
      expectNotAuthenticated(await send('get', '/me', cached));
      await waitFor(() => cache().isListening, 5_000, 'the LISTEN connection again');
      expectNotAuthenticated(await send('get', '/me', cached));
      expectJson(await send('get', '/me', key), 200);
    });

    it('updates last_used_at at most once a minute, cached or not', async () => {
      const { key: fresh, apiKey } = await t.app.get(ApiKeysService).issue(workspaceId);
      const lastUsed = async () =>
        (await t.dataSource.query(`SELECT last_used_at FROM api_keys WHERE id = $1`, [apiKey.id]))[0]
          .last_used_at as Date | null;
      expectJson(await send('get', '/me', fresh), 200);
      const first = await waitFor(lastUsed, 5_000, 'last_used_at');
      expectJson(await send('get', '/me', fresh), 200);
      expectJson(await send('get', '/me', fresh), 200);
      expect(await lastUsed()).toEqual(first);
    });
  });
});
