import type { CalculatorEntity } from '../../src/calculators/calculator.entity.js';
import {
  client,
  expectBadRequest,
  expectNoWebhook,
  expectWebhookShape,
  getWebhook,
  keysOf,
  listWebhooks,
  registerWebhook,
  removeWebhook,
  signingSecret,
  WEBHOOK_LIST_ITEM_KEYS,
  type Client,
} from '../support/management-api.js';
import { snapshotDatabase } from '../support/hostile-input.js';
import { untilClock } from '../support/receiver.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

const RECEIVER = 'https://receiver.example.com/hooks/calc';

describe('webhooks', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  /** A fresh workspace with two calculators, so no test sees another's webhooks. */
  async function setup(): Promise<{ api: Client; workspaceId: string; calcs: CalculatorEntity[] }> {
    const { workspace, key } = await createWorkspace(t);
    const calcs = [
      await createCalculator(t, workspace.id, 'Mortgage'),
      await createCalculator(t, workspace.id, 'Loan'),
    ];
    return { api: client(t, key), workspaceId: workspace.id, calcs };
  }

  describe('POST /webhooks', () => {
    it('registers a webhook and returns exactly the seven fields of spec 2.1', async () => {
      const { api, workspaceId, calcs } = await setup();
      const before = Date.now();
      const webhook = await registerWebhook(api, {
        url: RECEIVER,
        calculators: [calcs[0].id],
        triggers: ['newSubmission'],
        name: 'CRM sync',
        source: 'user',
      });
      const after = Date.now();
      expectWebhookShape(webhook, workspaceId);
      expect(webhook).toMatchObject({ name: 'CRM sync', url: RECEIVER, source: 'user', workspaceId });
      expect(Date.parse(webhook.createdAt)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(webhook.createdAt)).toBeLessThanOrEqual(after + 1000);
      expect(webhook.updatedAt).toBe(webhook.createdAt);
    });

    it('defaults name to "", source to user and triggers to [newSubmission]', async () => {
      const { api, calcs } = await setup();
      const webhook = await registerWebhook(api, { url: RECEIVER, calculators: [calcs[0].id] });
      expect(webhook.name).toBe('');
      expect(webhook.source).toBe('user');
      const [listed] = await listWebhooks(api);
      expect(listed.triggers).toEqual([{ type: 'newSubmission', webhookId: webhook.id }]);
    });

    it.each([
      ['zapier', 'automation_platform_1'],
      ['make', 'automation_platform_2'],
      ['n8n', 'automation_platform_3'],
      ['pipedream', 'automation_platform_4'],
      ['user', 'user'],
      ['automation_platform_1', 'automation_platform_1'],
      ['automation_platform_2', 'automation_platform_2'],
      ['automation_platform_3', 'automation_platform_3'],
      ['automation_platform_4', 'automation_platform_4'],
    ])('stores source %s as %s and returns it so everywhere', async (sent, stored) => {
      const { api, calcs } = await setup();
      const webhook = await registerWebhook(api, { url: RECEIVER, calculators: [calcs[0].id], source: sent });
      expect(webhook.source).toBe(stored);
      expect((await getWebhook(api, webhook.id)).source).toBe(stored);
      expect((await listWebhooks(api))[0].source).toBe(stored);
    });

    it('accepts an http URL and a URL of exactly 2048 characters', async () => {
      const { api, calcs } = await setup();
      const plain = await registerWebhook(api, { url: 'http://receiver.example.com/x', calculators: [calcs[0].id] });
      expect(plain.url).toBe('http://receiver.example.com/x');
      const long = `${RECEIVER}/${'a'.repeat(2048 - RECEIVER.length - 1)}`;
      expect(long).toHaveLength(2048);
      const webhook = await registerWebhook(api, { url: long, calculators: [calcs[0].id] });
      expect(webhook.url).toBe(long);
      expect((await getWebhook(api, webhook.id)).url).toBe(long);
    });

    it('accepts a URL with characters outside ASCII, as a browser does, and the document says so', async () => {
      // The app checks each request against its OpenAPI document: a `format: uri` there would fail this file.
      const { api, calcs } = await setup();
      const url = 'https://receiver.example.com/bücher/𡵓?q=ü';
      const webhook = await registerWebhook(api, { url, calculators: [calcs[0].id] });
      expect(webhook.url).toBe(url);
    });

    it('accepts a name of exactly 255 characters, counting characters rather than UTF-16 units', async () => {
      const { api, calcs } = await setup();
      const ascii = await registerWebhook(api, { url: RECEIVER, calculators: [calcs[0].id], name: 'n'.repeat(255) });
      expect(ascii.name).toBe('n'.repeat(255));
      const emoji = '😀'.repeat(255);
      const webhook = await registerWebhook(api, { url: RECEIVER, calculators: [calcs[0].id], name: emoji });
      expect(webhook.name).toBe(emoji);
      expect((await getWebhook(api, webhook.id)).name).toBe(emoji);
    });

    it('binds every calculator given, once, when the list repeats ids', async () => {
      const { api, calcs } = await setup();
      const webhook = await registerWebhook(api, {
        url: RECEIVER,
        calculators: [calcs[0].id, calcs[1].id, calcs[0].id, calcs[1].id],
      });
      const [listed] = await listWebhooks(api);
      expect(listed.id).toBe(webhook.id);
      expect(listed.calculators).toHaveLength(2);
      expect(listed.calculators).toEqual(
        expect.arrayContaining([
          { id: calcs[0].id, name: 'Mortgage' },
          { id: calcs[1].id, name: 'Loan' },
        ]),
      );
    });

    it('collapses repeated triggers into one', async () => {
      const { api, calcs } = await setup();
      const webhook = await registerWebhook(api, {
        url: RECEIVER,
        calculators: [calcs[0].id],
        triggers: ['newSubmission', 'newSubmission'],
      });
      const [listed] = await listWebhooks(api);
      expect(listed.triggers).toEqual([{ type: 'newSubmission', webhookId: webhook.id }]);
    });

    it('accepts 100 calculators', async () => {
      const { workspace, key } = await createWorkspace(t);
      const api = client(t, key);
      const ids: string[] = [];
      for (let i = 0; i < 100; i++) ids.push((await createCalculator(t, workspace.id, `C${i}`)).id);
      await registerWebhook(api, { url: RECEIVER, calculators: ids });
      const [listed] = await listWebhooks(api);
      expect(listed.calculators.map((c) => c.id).sort()).toEqual([...ids].sort());
    });

    it.each([
      'https://user:pass@receiver.example.com/hooks/calc',
      'https://user@receiver.example.com/hooks/calc',
      'https://:pass@receiver.example.com/hooks/calc',
      'http://user:pass@127.0.0.1:8080/hook',
    ])('rejects the url %s, which carries credentials, with 400 naming url and writes nothing', async (url) => {
      const { api, calcs } = await setup();
      const before = await snapshotDatabase(t);
      const error = expectBadRequest(await api.post('/webhooks', { url, calculators: [calcs[0].id] }), 'url');
      expect(error.details).toEqual([{ field: 'url', message: expect.stringMatching(/must not contain credentials/) }]);
      expect(await snapshotDatabase(t)).toEqual(before);
    });

    it('accepts localhost and private IP literals while the SSRF guard is off (development, tests)', async () => {
      const { api, calcs } = await setup();
      for (const url of ['http://localhost:8080/hook', 'http://127.0.0.1:8080/hook', 'http://[::ffff:10.0.0.1]/hook']) {
        expect((await registerWebhook(api, { url, calculators: [calcs[0].id] })).url).toBe(url);
      }
    });

    it('never returns the signing secret', async () => {
      const { api, calcs } = await setup();
      const webhook = await registerWebhook(api, { url: RECEIVER, calculators: [calcs[0].id] });
      const secret = await signingSecret(api, webhook.id);
      const bodies = [webhook, await getWebhook(api, webhook.id), await listWebhooks(api)];
      bodies.push(await removeWebhook(api, webhook.id));
      for (const body of bodies) {
        expect(JSON.stringify(body)).not.toContain(secret);
        expect(JSON.stringify(body)).not.toContain('whsec_');
      }
    });
  });

  describe('GET /webhooks', () => {
    it('returns { data: [] } for a workspace without webhooks', async () => {
      const { api } = await setup();
      expect(await listWebhooks(api)).toEqual([]);
    });

    it('lists a webhook right after it is registered, with exactly the spec 2.3 fields', async () => {
      const { api, workspaceId, calcs } = await setup();
      const webhook = await registerWebhook(api, {
        url: RECEIVER,
        calculators: [calcs[0].id, calcs[1].id],
        name: 'Both',
        source: 'make',
      });
      const list = await listWebhooks(api);
      expect(list).toHaveLength(1);
      const [item] = list;
      expect(keysOf(item)).toEqual(WEBHOOK_LIST_ITEM_KEYS);
      const { calculators, triggers, ...seven } = item;
      expect(seven).toEqual(webhook);
      expectWebhookShape(seven, workspaceId);
      expect(calculators).toHaveLength(2);
      for (const c of calculators) expect(keysOf(c)).toEqual(['id', 'name']);
      expect(calculators).toEqual(
        expect.arrayContaining([
          { id: calcs[0].id, name: 'Mortgage' },
          { id: calcs[1].id, name: 'Loan' },
        ]),
      );
      expect(triggers).toEqual([{ type: 'newSubmission', webhookId: webhook.id }]);
    });

    it('orders webhooks by createdAt ascending', async () => {
      const { api, calcs } = await setup();
      const ids: string[] = [];
      for (const name of ['first', 'second', 'third']) {
        const webhook = await registerWebhook(api, { url: RECEIVER, calculators: [calcs[0].id], name });
        ids.push(webhook.id);
        await untilClock(Date.parse(webhook.createdAt)); // distinct createdAt, so the order is well defined
      }
      const list = await listWebhooks(api);
      expect(list.map((w) => w.id)).toEqual(ids);
      const created = list.map((w) => Date.parse(w.createdAt));
      expect([...created].sort((a, b) => a - b)).toEqual(created);
    });

    it('orders webhooks created in the same millisecond by id', async () => {
      const { api, workspaceId, calcs } = await setup();
      const ids: string[] = [];
      for (let i = 0; i < 5; i++)
        ids.push((await registerWebhook(api, { url: RECEIVER, calculators: [calcs[0].id] })).id);
      await t.dataSource.query(`UPDATE webhooks SET created_at = '2024-01-15T10:30:00.000Z' WHERE workspace_id = $1`, [
        workspaceId,
      ]);
      const list = await listWebhooks(api);
      expect(list.map((w) => w.id)).toEqual([...ids].sort());
      for (const w of list) expect(w.createdAt).toBe('2024-01-15T10:30:00.000Z');
    });
  });

  describe('GET /webhooks/{id}', () => {
    it('returns the webhook with exactly the seven fields', async () => {
      const { api, workspaceId, calcs } = await setup();
      const webhook = await registerWebhook(api, { url: RECEIVER, calculators: [calcs[0].id], name: 'One' });
      const got = await getWebhook(api, webhook.id);
      expectWebhookShape(got, workspaceId);
      expect(got).toEqual(webhook);
    });
  });

  describe('GET /webhooks/{id}/secret', () => {
    it('returns a Standard Webhooks secret: whsec_ and base64 of at least 24 bytes, stable, unique per webhook', async () => {
      const { api, calcs } = await setup();
      const a = await registerWebhook(api, { url: RECEIVER, calculators: [calcs[0].id] });
      const b = await registerWebhook(api, { url: RECEIVER, calculators: [calcs[0].id] });
      const secret = await signingSecret(api, a.id);
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
      const raw = Buffer.from(secret.slice('whsec_'.length), 'base64');
      expect(raw.length).toBeGreaterThanOrEqual(24);
      expect(raw.toString('base64')).toBe(secret.slice('whsec_'.length));
      expect(await signingSecret(api, a.id)).toBe(secret);
      expect(await signingSecret(api, b.id)).not.toBe(secret);
    });
  });

  describe('DELETE /webhooks/{id}', () => {
    it('returns the webhook as it was, then GET, DELETE and /secret give 404 and the list drops it', async () => {
      const { api, workspaceId, calcs } = await setup();
      const keep = await registerWebhook(api, { url: RECEIVER, calculators: [calcs[0].id], name: 'keep' });
      const gone = await registerWebhook(api, { url: `${RECEIVER}/gone`, calculators: [calcs[1].id], name: 'gone' });
      const removed = await removeWebhook(api, gone.id);
      expectWebhookShape(removed, workspaceId);
      expect(removed).toEqual(gone);
      await expectNoWebhook(api, gone.id);
      const list = await listWebhooks(api);
      expect(list.map((w) => w.id)).toEqual([keep.id]);
      expect(await getWebhook(api, keep.id)).toEqual(keep);
      expect(list[0].calculators).toEqual([{ id: calcs[0].id, name: 'Mortgage' }]);
    });
  });
});

describe('POST /webhooks with the SSRF guard on (WEBHOOK_ALLOW_PRIVATE_TARGETS=false)', () => {
  let t: TestApp;
  let api: Client;
  let calculatorId: string;
  beforeAll(async () => {
    t = await createTestApp({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' });
    const { workspace, key } = await createWorkspace(t);
    api = client(t, key);
    calculatorId = (await createCalculator(t, workspace.id)).id;
  });
  afterAll(() => t.close());

  it.each([
    ['http://localhost/hook', 'loopback name localhost (RFC 6761)'],
    ['http://localhost.:8080/hook', 'loopback name localhost (RFC 6761)'],
    ['https://api.localhost/hook', 'loopback name localhost (RFC 6761)'],
    ['http://127.0.0.1:8080/hook', 'loopback 127.0.0.0/8'],
    ['http://0x7f.1/hook', 'loopback 127.0.0.0/8'],
    ['http://169.254.169.254/latest/meta-data', 'link-local 169.254.0.0/16'],
    ['http://[::1]/hook', 'loopback ::1/128'],
    ['http://[::127.0.0.1]/hook', 'IPv4-compatible IPv6 embedding loopback 127.0.0.0/8'],
    ['http://[::ffff:0:7f00:1]/hook', 'IPv4-translated IPv6 embedding loopback 127.0.0.0/8'],
    ['http://[::ffff:10.0.0.1]/hook', 'IPv4-mapped IPv6 embedding private-use 10.0.0.0/8'],
    ['http://[2002:a9fe:a9fe::1]/hook', '6to4 IPv6 embedding link-local 169.254.0.0/16'],
    ['http://[64:ff9b::10.0.0.1]/hook', 'NAT64 IPv6 embedding private-use 10.0.0.0/8'],
    ['http://[64:ff9b:1:7f00:0:100::]/hook', 'local-use NAT64 IPv6 embedding loopback 127.0.0.0/8'],
  ])('rejects %s with 400 naming url and the rule (%s), writing nothing', async (url, rule) => {
    const before = await snapshotDatabase(t);
    const error = expectBadRequest(await api.post('/webhooks', { url, calculators: [calculatorId] }), 'url');
    expect(error.details).toEqual([{ field: 'url', message: expect.stringContaining(`SSRF guard: ${rule}`) }]);
    expect(await snapshotDatabase(t)).toEqual(before);
  });

  it.each([
    'http://93.184.216.34/hook',
    'https://[::ffff:93.184.216.34]/hook',
    'https://[2606:4700::1111]/hook',
    RECEIVER,
  ])('accepts %s, a public literal or a name (names are checked at send time)', async (url) => {
    expect((await registerWebhook(api, { url, calculators: [calculatorId] })).url).toBe(url);
  });
});
