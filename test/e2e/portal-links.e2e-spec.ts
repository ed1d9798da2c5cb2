import { setTimeout as sleep } from 'node:timers/promises';
import {
  client,
  expectBadRequest,
  expectError,
  expectJson,
  expectNotAuthenticated,
  expectNotFound,
  expectTimestamp,
  keysOf,
  registerWebhook,
  webhookRowCount,
  type Client,
} from '../support/management-api.js';
import {
  createPortalLink,
  exchange,
  openSession,
  PORTAL_LINK_KEYS,
  sessionClient,
  tokenOf,
  type CreatedPortalLink,
} from '../support/portal.js';
import { PortalLinks } from '../../src/portal/portal-links.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

// Portal links (DESIGN 10): a single-use URL to the console signed in for the workspace, whose session is
// scoped to it, read-only when asked, and ends with the link's expiry or its revocation.

const TTL_SECONDS = 600;

describe('portal links', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ PORTAL_LINK_TTL: '10m' });
  });
  afterAll(() => t.close());

  async function workspace() {
    const { workspace, key } = await createWorkspace(t);
    const calculator = await createCalculator(t, workspace.id);
    const [{ id: keyId }] = (await t.dataSource.query('SELECT id FROM api_keys WHERE workspace_id = $1', [
      workspace.id,
    ])) as { id: string }[];
    return { workspace, key, keyId, calculator, api: client(t, key) };
  }

  const auditEvents = async (api: Client) => {
    const res = await api.get('/audit-events');
    expectJson(res, 200);
    return res.body.data as { action: string; actor: { type: string; id: string }; target: { id: string } }[];
  };

  const forbidden = (res: Parameters<typeof expectError>[0]) =>
    expect(keysOf(expectError(res, 403, 'forbidden'))).toEqual(['code', 'message']);

  describe('POST /portal-links', () => {
    it('makes a read-write link lasting PORTAL_LINK_TTL by default, its token only in the URL fragment', async () => {
      const { api, keyId } = await workspace();
      const before = Date.now();
      const res = await api.post('/portal-links'); // no body: the defaults
      expect(res.headers['cache-control']).toBe('no-store');
      const link = res.body.data as CreatedPortalLink;
      expect(keysOf(link)).toEqual([...PORTAL_LINK_KEYS, 'url'].sort());
      const url = new URL(link.url);
      expect(`${url.origin}${url.pathname}`).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/console\/$/);
      expect(url.search).toBe('');
      expect(tokenOf(link.url)).toMatch(/^acpl_[A-Za-z0-9_-]{43}$/);
      expect(link).toMatchObject({ readOnly: false, usedAt: null, revokedAt: null });
      expectTimestamp(link.expiresAt);
      const lasts = Date.parse(link.expiresAt) - before;
      expect(lasts).toBeGreaterThanOrEqual(TTL_SECONDS * 1000 - 1000);
      expect(lasts).toBeLessThanOrEqual(TTL_SECONDS * 1000 + 1000);

      const [event] = await auditEvents(api);
      expect(event).toMatchObject({
        action: 'portal_link.created',
        actor: { type: 'api_key', id: keyId },
        target: { type: 'portal_link', id: link.id },
        changes: { readOnly: false, expiresAt: link.expiresAt },
      });
      expect(JSON.stringify(await auditEvents(api))).not.toMatch(/acp[ls]_/);
    });

    it('takes expiresIn in seconds and readOnly, and builds the URL on the scheme the proxy says', async () => {
      const { api } = await workspace();
      const before = Date.now();
      const res = await api
        .post('/portal-links', { expiresIn: 90, readOnly: true })
        .set('x-forwarded-proto', 'https')
        .set('host', 'console.example.com');
      expectJson(res, 200);
      expect(res.body.data.url).toMatch(/^https:\/\/console\.example\.com\/console\/#portal=acpl_/);
      expect(res.body.data.readOnly).toBe(true);
      expect(Date.parse(res.body.data.expiresAt) - before).toBeLessThanOrEqual(91_000);
    });

    it.each([
      ['expiresIn', { expiresIn: TTL_SECONDS + 1 }],
      ['expiresIn', { expiresIn: 0 }],
      ['expiresIn', { expiresIn: 1.5 }],
      ['expiresIn', { expiresIn: '60' }],
      ['expiresIn', { expiresIn: null }],
      ['readOnly', { readOnly: 'yes' }],
      ['readOnly', { readOnly: null }],
      ['url', { url: 'https://example.com' }],
    ])('refuses a bad %s (%j) with a 400 naming it, and makes no link', async (field, body) => {
      const { api, workspace: w } = await workspace();
      expectBadRequest(await api.post('/portal-links', body), field);
      const [{ n }] = await t.dataSource.query('SELECT count(*)::int AS n FROM portal_links WHERE workspace_id = $1', [
        w.id,
      ]);
      expect(n).toBe(0);
    });

    it('stores only the hash of the token', async () => {
      const { api } = await workspace();
      const link = await createPortalLink(api);
      const rows = (await t.dataSource.query('SELECT * FROM portal_links WHERE id = $1', [link.id])) as object[];
      expect(rows).toHaveLength(1);
      expect(JSON.stringify(rows)).not.toContain(tokenOf(link.url).slice(5));
    });

    it('with an Idempotency-Key makes one link; the replay has no URL, the token being stored nowhere', async () => {
      const { api } = await workspace();
      const send = () => api.post('/portal-links', { readOnly: true }).set('Idempotency-Key', 'portal-1');
      const first = await send();
      const replay = await send();
      expectJson(first, 200);
      expectJson(replay, 200);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body.data).toEqual({ ...first.body.data, url: null });
      const list = await api.get('/portal-links');
      expect(list.body.data.map((l: { id: string }) => l.id)).toEqual([first.body.data.id]);
      const kept = await t.dataSource.query(`SELECT response_body FROM idempotency_keys WHERE key = 'portal-1'`);
      expect(JSON.stringify(kept)).not.toContain(tokenOf(first.body.data.url as string).slice(5));
      const reused = await api.post('/portal-links', { readOnly: false }).set('Idempotency-Key', 'portal-1');
      expectError(reused, 400, 'idempotency_key_reused');
    });
  });

  describe('POST /portal-sessions', () => {
    it('exchanges a link once for a session scoped to its workspace', async () => {
      const { api, workspace: w, calculator } = await workspace();
      const webhook = await registerWebhook(api, { url: 'https://example.com/p', calculators: [calculator.id] });
      const link = await createPortalLink(api);
      const res = await exchange(t, tokenOf(link.url));
      expectJson(res, 200);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.body.data).toEqual({
        token: expect.stringMatching(/^acps_/),
        expiresAt: link.expiresAt,
        readOnly: false,
      });
      const session = sessionClient(t, res.body.data.token as string);
      expect((await session.get('/me')).body).toMatchObject({ id: w.id });
      const list = await session.get('/webhooks');
      expectJson(list, 200);
      expect(list.body.data.map((h: { id: string }) => h.id)).toEqual([webhook.id]);

      const again = await exchange(t, tokenOf(link.url));
      expectNotAuthenticated(again);
      expect(JSON.stringify(again.body)).not.toContain(tokenOf(link.url));
      const [listed] = (await api.get('/portal-links')).body.data;
      expect(listed.id).toBe(link.id);
      expectTimestamp(listed.usedAt);
    });

    it('lets one of several racing exchanges of a link win, and refuses the others', async () => {
      const { api } = await workspace();
      const link = await createPortalLink(api);
      const answers = await Promise.all(Array.from({ length: 6 }, () => exchange(t, tokenOf(link.url))));
      expect(answers.map((r) => r.status).sort()).toEqual([200, 401, 401, 401, 401, 401]);
    });

    it.each([
      ['an unknown token', { token: `acpl_${'A'.repeat(43)}` }],
      ['a token of another shape', { token: 'qz-not-a-token' }],
    ])('answers %s with 401, the token not repeated', async (_what, body) => {
      const res = await t.http().post('/api/v1/portal-sessions').send(body);
      expectNotAuthenticated(res);
      expect(JSON.stringify(res.body)).not.toContain(body.token);
    });

    it.each([
      ['token', {}],
      ['token', { token: 42 }],
      ['extra', { token: 'x', extra: 1 }],
    ])('refuses a bad %s (%j) with a 400 naming it', async (field, body) => {
      expectBadRequest(await t.http().post('/api/v1/portal-sessions').send(body), field);
    });

    it('refuses an expired link, and ends its session when the link expires', async () => {
      const { api } = await workspace();
      const unused = await createPortalLink(api, { expiresIn: 1 });
      const opened = await createPortalLink(api, { expiresIn: 2 });
      const session = sessionClient(t, await openSession(t, opened));
      expectJson(await session.get('/webhooks'), 200);
      await sleep(Date.parse(opened.expiresAt) - Date.now() + 50);
      expectNotAuthenticated(await exchange(t, tokenOf(unused.url)));
      expectNotAuthenticated(await session.get('/webhooks'));
    });
  });

  describe('DELETE /portal-links/{id}', () => {
    it('revokes the link and ends its session at once; a second revocation changes nothing', async () => {
      const { api } = await workspace();
      const used = await createPortalLink(api);
      const unused = await createPortalLink(api);
      const session = sessionClient(t, await openSession(t, used));
      expectJson(await session.get('/webhooks'), 200);

      const revoked = await api.delete(`/portal-links/${used.id}`);
      expectJson(revoked, 200);
      expect(keysOf(revoked.body.data)).toEqual(PORTAL_LINK_KEYS);
      expectTimestamp(revoked.body.data.revokedAt);
      expectNotAuthenticated(await session.get('/webhooks'));
      expectJson(await api.delete(`/portal-links/${unused.id}`), 200);
      expectNotAuthenticated(await exchange(t, tokenOf(unused.url)));

      const again = await api.delete(`/portal-links/${used.id}`);
      expect(again.body.data.revokedAt).toBe(revoked.body.data.revokedAt);
      const revocations = (await auditEvents(api)).filter((e) => e.action === 'portal_link.revoked');
      expect(revocations.map((e) => e.target.id)).toEqual([unused.id, used.id]);
    });

    it("answers 404 for an unknown id and for another workspace's link, and leaves that one working", async () => {
      const mine = await workspace();
      const theirs = await workspace();
      const link = await createPortalLink(theirs.api);
      const theirSession = sessionClient(t, await openSession(t, link));
      expectNotFound(await mine.api.delete(`/portal-links/${link.id}`));
      expectNotFound(await mine.api.delete('/portal-links/tz4a98xxat96iws9zmbrgj3a'));
      expect((await mine.api.get('/portal-links')).body.data).toEqual([]);
      expectJson(await theirSession.get('/webhooks'), 200);
    });
  });

  describe('GET /portal-links', () => {
    it('lists the links newest first without tokens, page by page', async () => {
      const { api } = await workspace();
      const made: CreatedPortalLink[] = [];
      for (let i = 0; i < 3; i++) made.push(await createPortalLink(api, { readOnly: i === 1 }));
      const first = await api.get('/portal-links?limit=2');
      expectJson(first, 200);
      expect(keysOf(first.body)).toEqual(['data', 'nextCursor']);
      for (const link of first.body.data) expect(keysOf(link)).toEqual(PORTAL_LINK_KEYS);
      const second = await api.get(`/portal-links?limit=2&cursor=${first.body.nextCursor}`);
      expect(second.body.nextCursor).toBeNull();
      const ids = [...first.body.data, ...second.body.data].map((l: { id: string }) => l.id);
      expect(ids).toEqual(made.map((l) => l.id).reverse());
      expect(JSON.stringify([first.body, second.body])).not.toContain('acpl_');
      expectBadRequest(await api.get('/portal-links?cursor=nope'), 'cursor');
    });
  });

  describe('a portal session', () => {
    it('may not make, list or revoke portal links', async () => {
      const { api } = await workspace();
      const link = await createPortalLink(api);
      const session = sessionClient(t, await openSession(t, link));
      forbidden(await session.post('/portal-links', {}));
      forbidden(await session.get('/portal-links'));
      forbidden(await session.delete(`/portal-links/${link.id}`));
      expect((await api.get('/portal-links')).body.data).toHaveLength(1);
    });

    it('read-only: reads, and every write answers 403 and changes nothing', async () => {
      const { api, workspace: w, calculator } = await workspace();
      const webhook = await registerWebhook(api, { url: 'https://example.com/ro', calculators: [calculator.id] });
      const session = sessionClient(t, await openSession(t, await createPortalLink(api, { readOnly: true })));
      expectJson(await session.get(`/webhooks/${webhook.id}/health`), 200);
      forbidden(await session.post('/webhooks', { url: 'https://example.com/x', calculators: [calculator.id] }));
      forbidden(await session.delete(`/webhooks/${webhook.id}`));
      forbidden(await session.post(`/webhooks/${webhook.id}/disable`));
      forbidden(await session.post(`/webhooks/${webhook.id}/secret/rotate`, {}));
      forbidden(await session.post(`/calculators/${calculator.id}/submissions`, { data: {} }));
      expect(await webhookRowCount(t, w.id)).toBe(1);
      expect((await auditEvents(api)).map((e) => e.action)).toEqual(['portal_link.created', 'webhook.created']);
    });

    it("read-write: its changes are audited with the link's id as the actor", async () => {
      const { api, calculator } = await workspace();
      const link = await createPortalLink(api);
      const session = sessionClient(t, await openSession(t, link));
      const webhook = await registerWebhook(session, { url: 'https://example.com/rw', calculators: [calculator.id] });
      const [event] = await auditEvents(api);
      expect(event).toMatchObject({
        action: 'webhook.created',
        actor: { type: 'portal_link', id: link.id },
        target: { id: webhook.id },
      });
    });

    it("sees only its workspace: another workspace's webhook is a 404", async () => {
      const mine = await workspace();
      const theirs = await workspace();
      const their = await registerWebhook(theirs.api, {
        url: 'https://example.com/t',
        calculators: [theirs.calculator.id],
      });
      const session = sessionClient(t, await openSession(t, await createPortalLink(mine.api)));
      expectNotFound(await session.get(`/webhooks/${their.id}`));
      expectNotFound(await session.delete(`/webhooks/${their.id}`));
      expect((await session.get('/webhooks')).body.data).toEqual([]);
    });

    it('is refused when unknown or malformed, with 401', async () => {
      expectNotAuthenticated(await sessionClient(t, `acps_${'B'.repeat(43)}`).get('/webhooks'));
      expectNotAuthenticated(await sessionClient(t, 'nope').get('/webhooks'));
    });
  });

  describe('retention', () => {
    it('lets go of links expired for longer than AUDIT_RETENTION (365d), and keeps the rest', async () => {
      const { api } = await workspace();
      const [old, expired, live] = [
        await createPortalLink(api),
        await createPortalLink(api),
        await createPortalLink(api),
      ];
      await t.dataSource.query(`UPDATE portal_links SET expires_at = now() - interval '366 days' WHERE id = $1`, [
        old.id,
      ]);
      await t.dataSource.query(`UPDATE portal_links SET expires_at = now() - interval '364 days' WHERE id = $1`, [
        expired.id,
      ]);
      expect(await t.app.get(PortalLinks).purgeOnce()).toBe(1);
      const res = await api.get('/portal-links');
      expectJson(res, 200);
      expect((res.body.data as { id: string }[]).map((l) => l.id).sort()).toEqual([expired.id, live.id].sort());
    });
  });
});
