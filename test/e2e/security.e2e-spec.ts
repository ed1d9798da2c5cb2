import request from 'supertest';
import { hashApiKey } from '../../src/auth/api-key.js';
import { ApiKeysService } from '../../src/auth/api-keys.service.js';
import { API } from '../support/management-api.js';
import { createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

const API_CSP = "default-src 'none';frame-ancestors 'none'";

/** helmet's headers for a JSON API, on every response. */
function expectSecurityHeaders(res: request.Response, csp = API_CSP): void {
  expect(res.headers).toMatchObject({
    'content-security-policy': csp,
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
    'strict-transport-security': 'max-age=31536000; includeSubDomains',
  });
  expect(res.headers['x-powered-by']).toBeUndefined();
}

describe('security', () => {
  let t: TestApp;
  let key: string;
  let workspaceId: string;

  beforeAll(async () => {
    t = await createTestApp();
    ({
      key,
      workspace: { id: workspaceId },
    } = await createWorkspace(t));
  });
  afterAll(() => t.close());

  describe('helmet headers', () => {
    it.each([
      ['a 200', () => t.http().get(`${API}/me`).set('x-ac-api-key', key), 200],
      ['a 401', () => t.http().get(`${API}/me`), 401],
      ['a 404 inside /api/v1', () => t.http().get(`${API}/nope`).set('x-ac-api-key', key), 404],
      ['a 404 outside it', () => t.http().get('/nope'), 404],
      ['a 405', () => t.http().put(`${API}/me`).set('x-ac-api-key', key), 405],
      [
        'a 413',
        () =>
          t
            .http()
            .post(`${API}/webhooks`)
            .set('x-ac-api-key', key)
            .set('content-type', 'application/json')
            .send(`"${'x'.repeat(1 << 21)}"`),
        413,
      ],
      ['a probe', () => t.http().get('/healthz'), 200],
      ['the OpenAPI document', () => t.http().get(`${API}/openapi.json`), 200],
    ])('are on %s', async (_label, send, status) => {
      const res = await send();
      expect(res.status).toBe(status);
      expectSecurityHeaders(res);
    });

    it('let the API reference page run its own inline code and assets, and nothing from elsewhere', async () => {
      const res = await t.http().get(`${API}/docs`);
      expect(res.status).toBe(200);
      const csp = res.headers['content-security-policy'] as string;
      const directives = Object.fromEntries(
        csp.split(';').map((d) => {
          const [name, ...values] = d.trim().split(/\s+/);
          return [name, values];
        }),
      );
      expect(directives).toMatchObject({
        'default-src': ["'self'"],
        'script-src': ["'self'", "'unsafe-inline'"],
        'style-src': ["'self'", "'unsafe-inline'"],
        'connect-src': ["'self'"],
        'object-src': ["'none'"],
        'frame-ancestors': ["'none'"],
      });
      expectSecurityHeaders(res, csp);
    });
  });

  describe('API keys', () => {
    it('are stored as their SHA-256 only: no table holds a key or its secret part', async () => {
      const issued = [key, (await t.app.get(ApiKeysService).issue(workspaceId)).key];
      const rows: { prefix: string; key_hash: string }[] = await t.dataSource.query(
        'SELECT prefix, key_hash FROM api_keys WHERE workspace_id = $1',
        [workspaceId],
      );
      expect(rows.map((r) => r.key_hash).sort()).toEqual(issued.map(hashApiKey).sort());
      const tables: { table_name: string }[] = await t.dataSource.query(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
      );
      for (const { table_name: table } of tables) {
        const [dump] = await t.dataSource.query(
          `SELECT coalesce(string_agg(x::text, '|'), '') AS text FROM "${table}" x`,
        );
        for (const issuedKey of issued) {
          expect({ table, hasKey: dump.text.includes(issuedKey.slice(12)) }).toEqual({ table, hasKey: false });
        }
      }
    });
  });
});
