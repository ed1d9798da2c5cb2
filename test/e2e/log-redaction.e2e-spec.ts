import { PinoLogger } from 'nestjs-pino';
import type { Test } from 'supertest';
import { ApiKeysService } from '../../src/auth/api-keys.service.js';
import { LOG_DESTINATION } from '../../src/core/logging/logging.module.js';
import { API, client, registerWebhook } from '../support/management-api.js';
import { createPortalLink, exchange, sessionClient, tokenOf } from '../support/portal.js';
import { waitFor } from '../support/receiver.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

type LogLine = Record<string, unknown> & { raw: string; reqId?: string; status?: number | null };

/** The request line's fields, at every level (pino's own: level, time, pid, hostname, msg). */
const REQUEST_LINE_FIELDS = [
  'bytes',
  'hostname',
  'level',
  'method',
  'msg',
  'path',
  'pid',
  'remoteAddress',
  'reqId',
  'responseTime',
  'route',
  'status',
  'time',
  'userAgent',
  'workspaceId',
];

/** Where a client may put its key: each builds the request around a real, valid key. */
const PLACES: [string, (t: TestApp, key: string) => Test][] = [
  ['the x-ac-api-key header', (t, key) => t.http().get(`${API}/me`).set('x-ac-api-key', key)],
  ['an x-api-key header', (t, key) => t.http().get(`${API}/me`).set('x-api-key', key)],
  ['an Authorization header', (t, key) => t.http().get(`${API}/me`).set('authorization', `Bearer ${key}`)],
  ['a cookie', (t, key) => t.http().get(`${API}/me`).set('cookie', `session=${key}`)],
  ['a header named like a token', (t, key) => t.http().get(`${API}/me`).set('x-custom-token', key)],
  ['a header named like a secret', (t, key) => t.http().get(`${API}/me`).set('x-client-secret', key)],
  ['a header named like auth', (t, key) => t.http().get(`${API}/me`).set('x-auth', key)],
  ['a header of any name', (t, key) => t.http().get(`${API}/me`).set('x-note', `see ${key} here`)],
  ['?api_key=', (t, key) => t.http().get(`${API}/me?api_key=${key}`)],
  ['?x-ac-api-key=', (t, key) => t.http().get(`${API}/me?x-ac-api-key=${key}`)],
  ['?access_token=', (t, key) => t.http().get(`${API}/webhooks?access_token=${key}`)],
  ['?secret= after another parameter', (t, key) => t.http().get(`${API}/webhooks?limit=5&secret=${key}`)],
  ['a query value of any name', (t, key) => t.http().get(`${API}/webhooks?q=${key}`)],
  ['a query parameter name', (t, key) => t.http().get(`${API}/webhooks?${key}=1`)],
  ['a percent-encoded query value', (t, key) => t.http().get(`${API}/me?k=${key.replaceAll('_', '%5F')}`)],
  ['a path parameter', (t, key) => t.http().get(`${API}/webhooks/${key}`).set('x-ac-api-key', key)],
  ['an unknown path', (t, key) => t.http().get(`${API}/${key}/x`)],
  ['a path after a bad JSON body', (t, key) => t.http().post(`${API}/webhooks/${key}`).type('json').send('{bad')],
  ['the x-request-id header', (t, key) => t.http().get(`${API}/me`).set('x-request-id', key)],
];

describe('API keys in request logs (LOG_LEVEL=trace)', () => {
  const lines: string[] = [];
  let t: TestApp;
  const logLines = (): LogLine[] => lines.map((raw) => ({ ...JSON.parse(raw), raw }));
  const requestLine = (id: string) =>
    waitFor(() => logLines().find((l) => l.reqId === id && l.status !== undefined), 5000, `log of ${id}`);

  beforeAll(async () => {
    t = await createTestApp({ LOG_LEVEL: 'trace', RATE_LIMIT_PER_MINUTE: '3' }, (builder) =>
      builder.overrideProvider(LOG_DESTINATION).useValue({ write: (line: string) => void lines.push(line) }),
    );
  });
  afterAll(() => t.close());

  it('hold what an operator reads, the same fields at every level, and no header', async () => {
    const { workspace, key } = await createWorkspace(t);
    const ok = await t
      .http()
      .get(`${API}/me?limit=5&api_key=${key}`)
      .set('x-ac-api-key', key)
      .set('user-agent', `probe/1.0 (${key})`);
    const unauthenticated = await t.http().get(`${API}/me`).set('user-agent', 'probe/1.0');
    const keys = t.app.get(ApiKeysService);
    const authenticate = keys.authenticate;
    keys.authenticate = () => Promise.reject(new Error('simulated failure'));
    const failed = await t.http().get(`${API}/webhooks`).set('x-ac-api-key', key);
    keys.authenticate = authenticate;
    expect([ok.status, unauthenticated.status, failed.status]).toEqual([200, 401, 500]);

    const logged: LogLine[] = [];
    for (const res of [ok, unauthenticated, failed]) logged.push(await requestLine(res.headers['x-request-id']));
    expect(logged.map((line) => line.level)).toEqual(['info', 'warn', 'error']);
    for (const { raw: _raw, ...line } of logged) expect(Object.keys(line).sort()).toEqual(REQUEST_LINE_FIELDS);
    expect(logged[0]).toMatchObject({
      reqId: ok.headers['x-request-id'],
      msg: 'GET /api/v1/me 200',
      method: 'GET',
      route: '/api/v1/me',
      path: '/api/v1/me?limit=5&api_key=[Redacted]',
      status: 200,
      workspaceId: workspace.id,
      remoteAddress: expect.stringMatching(/127\.0\.0\.1$/),
      userAgent: 'probe/1.0 ([Redacted])',
      bytes: Number(ok.headers['content-length']),
    });
    expect(typeof logged[0].responseTime).toBe('number');
    expect(logged[1]).toMatchObject({ status: 401, workspaceId: null, userAgent: 'probe/1.0' });
    expect(logged[2]).toMatchObject({ status: 500, route: '/api/v1/webhooks', workspaceId: null });
    expect(logged.map((line) => line.raw).join('\n')).not.toContain(key.slice(13));
  });

  it.each(PLACES)('never appear when sent in %s', async (_place, send) => {
    const { key } = await createWorkspace(t);
    const res = await send(t, key);
    const id = res.headers['x-request-id'];
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const line = await requestLine(id);
    expect(line.status).toBe(res.status);
    expect(line.level).toBe(res.status >= 500 ? 'error' : res.status >= 400 ? 'warn' : 'info');
    const leaks = lines.filter((raw) => raw.includes(key) || raw.includes(key.slice(13)));
    expect(leaks).toEqual([]);
  });

  it('never appear in the logged cause of a 500', async () => {
    const { key } = await createWorkspace(t);
    const keys = t.app.get(ApiKeysService);
    const authenticate = keys.authenticate;
    keys.authenticate = () => Promise.reject(new Error('simulated failure'));
    let id = '';
    try {
      const res = await t.http().get(`${API}/webhooks/${key}`).set('x-ac-api-key', key).expect(500);
      id = res.headers['x-request-id'];
      expect((await requestLine(id)).level).toBe('error');
    } finally {
      keys.authenticate = authenticate;
    }
    const cause = logLines().find((l) => l.context === 'HttpExceptionFilter' && l.reqId === id);
    expect(cause?.msg).toMatch(/^Unhandled error \S+ on GET \/api\/v1\/webhooks\/\[Redacted\]$/);
    expect(lines.filter((raw) => raw.includes(key) || raw.includes(key.slice(13)))).toEqual([]);
  });

  it('never appear, whatever the outcome of the request', async () => {
    const { workspace, key } = await createWorkspace(t);
    const altered = `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`;
    const api = client(t, key);
    const calculator = await createCalculator(t, workspace.id);
    await registerWebhook(api, { url: 'https://receiver.example.com/h', calculators: [calculator.id] });
    const sent = [
      t.http().get(`${API}/webhooks/nope`).set('x-ac-api-key', key),
      t.http().post(`${API}/webhooks`).set('x-ac-api-key', key).send({ url: 'nope' }),
      t.http().get(`${API}/me`).set('x-ac-api-key', altered),
      t.http().post(`${API}/webhooks`).set('x-ac-api-key', key).set('content-type', 'application/json').send('{bad'),
      t.http().get(`${API}/me`).set('x-ac-api-key', key).set('authorization', `Bearer ${key}`),
      ...Array.from({ length: 3 }, () => t.http().get(`${API}/me`).set('x-ac-api-key', key)),
    ];
    const statuses: number[] = [];
    for (const req of sent) {
      const res = await req;
      statuses.push(res.status);
      expect((await requestLine(res.headers['x-request-id'])).status).toBe(res.status);
    }
    expect(statuses).toEqual(expect.arrayContaining([404, 400, 401, 429]));
    for (const secret of [key, altered, key.slice(13)]) {
      expect(lines.filter((line) => line.includes(secret))).toEqual([]);
    }
  });

  // Moved here from idempotency.e2e-spec.ts: one root logger per process, so log capture lives in one file.
  it('never carry an Idempotency-Key: no line names it', async () => {
    const secretish = 'order-4711/jane.doe@example.com';
    const body = { url: 'https://receiver.example.com/h', calculators: [] as string[] };
    const send = (key: string, payload: object, idempotencyKey = secretish) =>
      t.http().post(`${API}/webhooks`).set('x-ac-api-key', key).set('Idempotency-Key', idempotencyKey).send(payload);
    const first = await createWorkspace(t);
    body.calculators = [(await createCalculator(t, first.workspace.id)).id];
    const answers = [
      await send(first.key, body),
      await send(first.key, body),
      await send(first.key, { ...body, name: 'other' }),
      await send((await createWorkspace(t)).key, body, `${secretish}\u00e9`),
    ];
    expect(answers.map((res) => res.status)).toEqual([200, 200, 400, 400]);
    expect(answers[1].headers['idempotent-replayed']).toBe('true');
    for (const res of answers) {
      const line = await requestLine(res.headers['x-request-id']);
      expect(line.raw).not.toContain('idempotency-key');
    }
    expect(lines.filter((line) => line.includes('jane.doe'))).toEqual([]);
  });

  it("never carry a portal link's token or its session credential, whatever the outcome", async () => {
    const { workspace, key } = await createWorkspace(t);
    const api = client(t, key);
    const calculator = await createCalculator(t, workspace.id);
    const link = await createPortalLink(api, { readOnly: true });
    const token = tokenOf(link.url);
    const opened = await exchange(t, token);
    const session: string = opened.body.data.token;
    const portal = sessionClient(t, session);
    const answers = [
      opened,
      await exchange(t, token), // used: 401
      await portal.get('/webhooks'),
      await portal.post('/webhooks', { url: 'https://receiver.example.com/h', calculators: [calculator.id] }), // 403
      await portal.get(`/webhooks/${session}`),
      await t.http().get(`${API}/webhooks?session=${session}&portal=${token}`),
      await t.http().post(`${API}/portal-sessions`).type('json').send(`{"token":"${token}"`), // bad JSON
      await api.delete(`/portal-links/${link.id}`),
      await portal.get('/webhooks'), // revoked: 401
    ];
    expect(answers.map((res) => res.status)).toEqual([200, 401, 200, 403, 404, 401, 400, 200, 401]);
    for (const res of answers) {
      expect((await requestLine(res.headers['x-request-id'])).status).toBe(res.status);
      expect(JSON.stringify(res.body)).not.toContain(token.slice(5));
    }
    for (const secret of [token.slice(5), session.slice(5)]) {
      expect(lines.filter((line) => line.includes(secret))).toEqual([]);
    }
  });

  it("never carry a field named secret, at the top or two levels down, through the app's logger", async () => {
    const logger = await t.app.resolve(PinoLogger);
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw=';
    logger.info(
      { probe: 'censor', secret, webhook: { secret }, list: [{ secret }], page: { webhook: { secret } } },
      'probe',
    );
    const line = await waitFor(() => logLines().find((l) => l.probe === 'censor'), 5000, 'the probe line');
    expect(line).toMatchObject({
      secret: '[Redacted]',
      webhook: { secret: '[Redacted]' },
      list: [{ secret: '[Redacted]' }],
      page: { webhook: { secret: '[Redacted]' } },
    });
    expect(lines.filter((raw) => raw.includes(secret))).toEqual([]);
  });
});
