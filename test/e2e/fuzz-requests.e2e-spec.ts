import { createId } from '@paralleldrive/cuid2';
import fc from 'fast-check';
import { ApiKeysService } from '../../src/auth/api-keys.service.js';
import { prefixOf } from '../../src/auth/api-key.js';
import { client, registerWebhook } from '../support/management-api.js';
import {
  closeAgent,
  CONTENT_TYPES,
  contractViolation,
  expectPrototypesUntouched,
  jsonText,
  listen,
  NUMBER_TEXTS,
  oddString,
  POLLUTION_KEYS,
  rawRequest,
  snapshotDatabase,
  type RawRequest,
} from '../support/hostile-input.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

// FUZZ_RUNS=2000 for a longer hunt; the default keeps the file well under a minute.
const NUM_RUNS = Number(process.env.FUZZ_RUNS ?? 200);

/** Every operation of the API, with its ids as placeholders: {w} webhook, {c} calculator, {d} delivery. */
const OPERATIONS = [
  ['GET', '/webhooks'],
  ['POST', '/webhooks'],
  ['GET', '/webhooks/{w}'],
  ['DELETE', '/webhooks/{w}'],
  ['GET', '/webhooks/{w}/secret'],
  ['GET', '/calculators'],
  ['GET', '/me'],
  ['POST', '/calculators/{c}/submissions'],
  ['GET', '/webhooks/{w}/deliveries'],
  ['GET', '/webhooks/{w}/deliveries/{d}'],
  ['POST', '/webhooks/{w}/deliveries/{d}/retry'],
  ['GET', '/deliveries'],
  ['GET', '/deliveries/{d}'],
  ['POST', '/webhooks/{w}/recover'],
  ['GET', '/webhooks/{w}/recoveries/{d}'], // a delivery id in the recovery slot: never a recovery, so 404
  ['GET', '/webhooks/{w}/health'],
  ['POST', '/webhooks/{w}/disable'],
  ['POST', '/webhooks/{w}/enable'],
  ['POST', '/webhooks/{w}/test'],
  ['POST', '/webhooks/{w}/secret/rotate'],
] as const;
const PUBLIC_PATHS = ['/healthz', '/readyz', '/metrics', '/api/v1/openapi.json', '/api/v1/docs', '/admin/queues'];
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'TRACE', 'PROPFIND', 'SEARCH'];

/** Percent-encodes the UTF-8 bytes of any string, lone surrogates included (encodeURIComponent throws on those). */
const percentEncode = (text: string) =>
  [...Buffer.from(text, 'utf8')]
    .map((byte) =>
      /[A-Za-z0-9_.~-]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16)}`,
    )
    .join('');

interface Fixture {
  key: string;
  workspaceId: string;
  webhookId: string;
  calculatorId: string;
  deliveryId: string;
}

describe('fuzz: paths, query strings, headers and methods on every endpoint', () => {
  let t: TestApp;
  let port: number;
  let own: Fixture;
  let other: Fixture;
  let revokedKey: string;

  async function fixture(name: string): Promise<Fixture> {
    const { workspace, key } = await createWorkspace(t, name);
    const api = client(t, key);
    const calculatorId = (await createCalculator(t, workspace.id)).id;
    const webhook = await registerWebhook(api, { url: `https://${name}.example.com/h`, calculators: [calculatorId] });
    await api.post(`/calculators/${calculatorId}/submissions`, { data: { a: 1 } }).expect(200);
    const [delivery] = await t.dataSource.query('SELECT id FROM deliveries WHERE webhook_id = $1', [webhook.id]);
    return { key, workspaceId: workspace.id, webhookId: webhook.id, calculatorId, deliveryId: delivery.id };
  }

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_PER_MINUTE: '0', MAX_WEBHOOKS_PER_WORKSPACE: '100000' });
    port = await listen(t);
    own = await fixture('own');
    other = await fixture('other');
    const keys = t.app.get(ApiKeysService);
    revokedKey = (await keys.issue(own.workspaceId)).key;
    await keys.revoke(own.workspaceId, prefixOf(revokedKey));
  });
  afterAll(async () => {
    closeAgent();
    await t.close();
  });

  /** Sends one request: never a 5xx, a documented 4xx, and a 4xx (or any GET) leaves the database as it was. */
  async function expectHandled(req: RawRequest) {
    const before = await snapshotDatabase(t);
    const res = await rawRequest(port, req);
    expect({ request: `${req.method} ${req.path}`, violation: contractViolation(req, res) }).toEqual({
      request: `${req.method} ${req.path}`,
      violation: null,
    });
    if (res.status >= 400 || ['GET', 'HEAD'].includes(req.method)) expect(await snapshotDatabase(t)).toEqual(before);
    expectPrototypesUntouched();
    return res;
  }

  const ids = () => ({
    w: [own.webhookId, other.webhookId],
    c: [own.calculatorId, other.calculatorId],
    d: [own.deliveryId, other.deliveryId],
  });

  const hostileId = fc.oneof(
    fc.constant(createId()),
    oddString().map(percentEncode),
    fc.constantFrom('%', '%zz', '%00', '%2F', '%2e%2e', '..', '.', ';', ':', '@', '*', "'", '%ef%bf%bf', '%c0%ae'),
    fc.integer({ min: 1, max: 8000 }).map((n) => 'a'.repeat(n)),
    fc.constantFrom(...NUMBER_TEXTS.map(percentEncode)),
  );

  const body = fc.oneof(fc.constant(undefined), jsonText(['url', 'calculators', 'data']));

  it('path ids: any id is a 404 unless it is the caller’s own, and another workspace’s never leaks', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...OPERATIONS.filter(([, path]) => path.includes('{'))),
        fc.constantFrom('own', 'foreign', 'hostile'),
        hostileId,
        body,
        async ([method, template], which, junk, payload) => {
          const pick = (slot: 'w' | 'c' | 'd') =>
            which === 'own' ? ids()[slot][0] : which === 'foreign' ? ids()[slot][1] : junk;
          // Removing the fixture's own webhook would turn the rest of the run into 404s.
          fc.pre(!(which === 'own' && method === 'DELETE'));
          const path = `/api/v1${template.replace(/\{(w|c|d)\}/g, (_m, slot: 'w' | 'c' | 'd') => pick(slot))}`;
          const headers: Record<string, string> = { 'x-ac-api-key': own.key };
          if (payload !== undefined) headers['content-type'] = 'application/json';
          const res = await expectHandled({ method, path, headers, body: payload });
          // Another workspace's ids are unknown ones (a 400 comes only from the body, before any lookup).
          if (which === 'foreign') expect([400, 404]).toContain(res.status);
          expect(res.text).not.toContain(other.workspaceId);
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });

  it('query strings: paging and filters at int32 edges, floats, exponents, arrays and junk', async () => {
    const queryKey = fc.oneof(
      fc.constantFrom('limit', 'offset', 'status', 'limit[]', 'limit[0]', 'offset[a]', ...POLLUTION_KEYS),
      fc.constantFrom('cursor', 'since', 'until', 'webhookId', 'calculatorId', 'since[]'),
      oddString(3),
    );
    const queryValue = fc.oneof(
      fc.constantFrom(...NUMBER_TEXTS),
      fc.constantFrom('pending', 'succeeded', 'failed', 'cancelled', 'PENDING'),
      fc.constantFrom('skipped', '2024-01-15T10:30:00.000Z', '2024-02-30T00:00:00Z', createId()),
      oddString(),
    );
    const query = fc
      .array(fc.tuple(queryKey, queryValue), { minLength: 1, maxLength: 5 })
      .map((pairs) => pairs.map(([k, v]) => `${percentEncode(k)}=${percentEncode(v)}`).join('&'));
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...OPERATIONS.filter(([method]) => method === 'GET')),
        query,
        async ([method, template], qs) => {
          const path = `/api/v1${template.replace('{w}', own.webhookId).replace('{d}', own.deliveryId)}?${qs}`;
          const res = await expectHandled({ method, path, headers: { 'x-ac-api-key': own.key } });
          if (res.status === 200 && /\/(calculators|deliveries)$/.test(template)) {
            expect(JSON.parse(res.text).data.length).toBeLessThanOrEqual(100);
          }
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });

  it('headers: content types, API key variants and junk never get past authentication or cause a 5xx', async () => {
    const latin1Junk = fc
      .string({ unit: 'binary-ascii', maxLength: 40 })
      // What a header value may hold: tab, visible ASCII and Latin-1.
      .map((s) => [...s].filter((c) => c === '\t' || (c >= ' ' && c !== '\x7f')).join(''));
    const keyVariants: Record<string, () => string | undefined> = {
      none: () => undefined,
      own: () => own.key,
      other: () => other.key,
      revoked: () => revokedKey,
      leadingSpace: () => ` ${own.key}`,
      trailingSpace: () => `${own.key} `,
      upperCase: () => own.key.toUpperCase(),
      extraCharacter: () => `${own.key}x`,
      truncated: () => own.key.slice(0, -1),
      twice: () => `${own.key}, ${own.key}`,
      empty: () => '',
      neverIssued: () => `ack_${'a'.repeat(8)}_${'A'.repeat(43)}`,
      long: () => 'x'.repeat(8000),
    };
    const apiKey = fc.oneof(
      fc.constantFrom(...Object.keys(keyVariants)).map((variant) => keyVariants[variant]()),
      latin1Junk,
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...OPERATIONS),
        apiKey,
        fc.oneof(fc.constantFrom(...CONTENT_TYPES), latin1Junk),
        body,
        latin1Junk,
        async ([method, template], key, contentType, payload, junk) => {
          fc.pre(!(method === 'DELETE' && key === own.key));
          const headers: Record<string, string> = { 'content-type': contentType, accept: junk, 'x-request-id': junk };
          if (key !== undefined) headers['x-ac-api-key'] = key;
          const path = `/api/v1${template.replace('{w}', own.webhookId).replace('{c}', own.calculatorId).replace('{d}', own.deliveryId)}`;
          const res = await expectHandled({ method, path, headers, body: payload });
          // HTTP drops whitespace around a header value, so ` key ` is the key itself.
          const sent = key?.replace(/^[ \t]+|[ \t]+$/g, '');
          if (sent !== own.key && sent !== other.key) expect(res.status).toBeGreaterThanOrEqual(400);
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });

  it('Idempotency-Key: any value on any POST is a 400 naming it, or the answer is kept and replayed as it was', async () => {
    const POSTS = OPERATIONS.filter(([method]) => method === 'POST');
    const bodies: Record<string, string[]> = {
      '/webhooks': ['{}', `{"url":"https://own.example.com/k","calculators":["${own.calculatorId}"]}`],
      '/calculators/{c}/submissions': ['{}', '{"data":{"a":1}}', '{"data":"x"}'],
      '/webhooks/{w}/deliveries/{d}/retry': [''],
      '/webhooks/{w}/recover': [`{"since":"${new Date(Date.now() - 3_600_000).toISOString()}","dryRun":true}`, '{}'],
      '/webhooks/{w}/disable': [''],
      '/webhooks/{w}/enable': [''],
      '/webhooks/{w}/test': ['', '{}'],
      '/webhooks/{w}/secret/rotate': ['{}', '{"overlapSeconds":60}', '{"overlapSeconds":-1}'],
    };
    const keyText = fc.oneof(
      // What a header value may hold: tab, visible ASCII and Latin-1.
      fc
        .string({ unit: 'binary', maxLength: 60 })
        .map((s) => [...s].filter((c) => c === '\t' || (c >= ' ' && c !== '\x7f' && c <= '\xff')).join('')),
      fc.string({ unit: 'grapheme-ascii', maxLength: 250 }),
      fc.integer({ min: 240, max: 400 }).map((n) => 'k'.repeat(n)),
    );
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...POSTS), keyText, fc.nat(), async ([method, template], text, pick) => {
        const key = `${run++}:${text}`;
        const path = `/api/v1${template.replace('{w}', own.webhookId).replace('{c}', own.calculatorId).replace('{d}', own.deliveryId)}`;
        const payload = bodies[template][pick % bodies[template].length];
        const headers: Record<string, string> = { 'x-ac-api-key': own.key, 'idempotency-key': key };
        if (payload !== '') headers['content-type'] = 'application/json';
        const req = { method, path, headers, ...(payload === '' ? {} : { body: payload }) };
        const first = await expectHandled(req);
        // HTTP drops whitespace around a header value.
        if (!/^[\x20-\x7e]{1,255}$/.test(key.replace(/[ \t]+$/, ''))) {
          expect(first.status).toBe(400);
          expect(JSON.parse(first.text).error.details).toEqual([
            { field: 'Idempotency-Key', message: expect.any(String) },
          ]);
          return;
        }
        const before = await snapshotDatabase(t);
        const again = await expectHandled(req);
        expect({ status: again.status, body: again.text, replayed: again.headers['idempotent-replayed'] }).toEqual({
          status: first.status,
          body: first.text,
          replayed: 'true',
        });
        expect(await snapshotDatabase(t)).toEqual(before);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('methods: any method on any path, public ones included, is served or refused as documented', async () => {
    const path = fc.oneof(
      fc.constantFrom(...OPERATIONS.map(([, p]) => `/api/v1${p}`)),
      fc.constantFrom(
        ...PUBLIC_PATHS,
        '/',
        '/api',
        '/api/v1',
        '/API/V1/ME',
        '/api/v1//me',
        '/api/v1/me/',
        '/api/v1/./me',
      ),
      oddString().map((s) => `/api/v1/${percentEncode(s)}`),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...METHODS), path, fc.boolean(), async (method, template, withKey) => {
        fc.pre(!(method === 'DELETE' && withKey));
        const resolved = template
          .replace('{w}', other.webhookId)
          .replace('{c}', other.calculatorId)
          .replace('{d}', other.deliveryId);
        await expectHandled({ method, path: resolved, headers: withKey ? { 'x-ac-api-key': own.key } : {} });
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('still serves normally after all of it', async () => {
    const res = await rawRequest(port, { method: 'GET', path: '/api/v1/me', headers: { 'x-ac-api-key': own.key } });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text).id).toBe(own.workspaceId);
  });
});
