import { AuditEvents } from '../../src/audit/audit-events.js';
import {
  client,
  expectBadRequest,
  expectJson,
  keysOf,
  registerWebhook,
  signingSecret,
  type Client,
} from '../support/management-api.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

// The audit log (DESIGN 10): every change a workspace makes through the API, who made it (the API key's
// id), in which request, and what changed, never a secret; GET /audit-events pages it newest first.

const EVENT_KEYS = ['action', 'actor', 'changes', 'id', 'occurredAt', 'requestId', 'target'];

describe('GET /audit-events', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  async function workspaceWithKey() {
    const { workspace, key } = await createWorkspace(t);
    const [{ id: keyId }] = (await t.dataSource.query('SELECT id FROM api_keys WHERE workspace_id = $1', [
      workspace.id,
    ])) as { id: string }[];
    const calculator = await createCalculator(t, workspace.id);
    return { workspace, key, keyId, calculator, api: client(t, key) };
  }

  const events = async (api: Client, query = '') => {
    const res = await api.get(`/audit-events${query}`);
    expectJson(res, 200);
    expect(keysOf(res.body)).toEqual(['data', 'nextCursor']);
    return res.body as { data: Record<string, unknown>[]; nextCursor: string | null };
  };

  it("records each change with the key's id, the request id and what changed, newest first, and no secret", async () => {
    const { api, keyId, calculator } = await workspaceWithKey();
    const created = await api.post('/webhooks', {
      url: 'https://example.com/audit',
      name: 'Audited',
      calculators: [calculator.id],
    });
    expectJson(created, 200);
    const id = created.body.data.id as string;
    const secretBefore = await signingSecret(api, id);
    const rotated = await api.post(`/webhooks/${id}/secret/rotate`, { overlapSeconds: 60 });
    expectJson(rotated, 200);
    const disabled = await api.post(`/webhooks/${id}/disable`);
    expectJson(await api.post(`/webhooks/${id}/disable`), 200); // already disabled: no change, no event
    const enabled = await api.post(`/webhooks/${id}/enable`);
    const removed = await api.delete(`/webhooks/${id}`);
    expectJson(removed, 200);

    const { data, nextCursor } = await events(api);
    expect(nextCursor).toBeNull();
    expect(data.map((e) => e.action)).toEqual([
      'webhook.removed',
      'webhook.enabled',
      'webhook.disabled',
      'webhook.secret_rotated',
      'webhook.created',
    ]);
    const requestIds = [removed, enabled, disabled, rotated, created].map((res) => res.headers['x-request-id']);
    data.forEach((event, i) => {
      expect(keysOf(event)).toEqual(EVENT_KEYS);
      expect(event).toMatchObject({
        actor: { type: 'api_key', id: keyId },
        requestId: requestIds[i],
        target: { type: 'webhook', id },
      });
      expect(Number.isNaN(Date.parse(event.occurredAt as string))).toBe(false);
    });
    expect(data[4].changes).toEqual({ url: 'https://example.com/audit', name: 'Audited' });
    expect(data[3].changes).toEqual({ previousKeyExpiresAt: rotated.body.data.previousKeyExpiresAt });
    const text = JSON.stringify(data);
    expect(text).not.toContain(secretBefore);
    expect(text).not.toContain(rotated.body.data.key);
  });

  it('records a retried delivery and a started recovery, and not a dry run', async () => {
    const { api, workspace, calculator } = await workspaceWithKey();
    const hook = await registerWebhook(api, { url: 'https://example.com/retried', calculators: [calculator.id] });
    expectJson(await api.post(`/calculators/${calculator.id}/submissions`, { data: { a: 1 } }), 200);
    const [{ id: deliveryId }] = (await t.dataSource.query(
      `SELECT d.id FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE w.workspace_id = $1`,
      [workspace.id],
    )) as { id: string }[];
    expectJson(await api.post(`/webhooks/${hook.id}/deliveries/${deliveryId}/retry`), 202);
    const range = { since: new Date(Date.now() - 3_600_000).toISOString(), until: new Date().toISOString() };
    expectJson(await api.post(`/webhooks/${hook.id}/recover`, { ...range, dryRun: true }), 200);
    const recovery = await api.post(`/webhooks/${hook.id}/recover`, range);
    expectJson(recovery, 202);

    const { data } = await events(api);
    expect(data.slice(0, 2)).toMatchObject([
      {
        action: 'recovery.started',
        target: { type: 'recovery', id: recovery.body.data.id },
        changes: { webhookId: hook.id, since: range.since, until: range.until },
      },
      { action: 'delivery.retried', target: { type: 'delivery', id: deliveryId }, changes: { webhookId: hook.id } },
    ]);
    expect(data.filter((e) => e.action === 'recovery.started')).toHaveLength(1);
  });

  it('filters by action and time, pages with a cursor, and shows no other workspace its events', async () => {
    const { api, calculator } = await workspaceWithKey();
    const other = await workspaceWithKey();
    for (let i = 0; i < 3; i++) {
      await registerWebhook(api, { url: `https://example.com/p${i}`, calculators: [calculator.id] });
    }
    await registerWebhook(other.api, { url: 'https://example.com/other', calculators: [other.calculator.id] });

    const first = await events(api, '?action=webhook.created&limit=2');
    expect(first.data).toHaveLength(2);
    expect(first.nextCursor).not.toBeNull();
    const second = await events(api, `?action=webhook.created&limit=2&cursor=${first.nextCursor}`);
    expect(second.data).toHaveLength(1);
    expect(second.nextCursor).toBeNull();
    const urls = [...first.data, ...second.data].map((e) => (e.changes as { url: string }).url);
    expect(urls).toEqual(['https://example.com/p2', 'https://example.com/p1', 'https://example.com/p0']);

    expect((await events(api, '?action=webhook.removed')).data).toEqual([]);
    const future = new Date(Date.now() + 60_000).toISOString();
    expect((await events(api, `?since=${future}`)).data).toEqual([]);
    expect((await events(api, `?until=${future}`)).data).toHaveLength(3);
    // Another workspace's cursor is refused; its events are not listed.
    expectBadRequest(await other.api.get(`/audit-events?cursor=${first.nextCursor}`), 'cursor');
    expect((await events(other.api)).data.map((e) => (e.changes as { url: string }).url)).toEqual([
      'https://example.com/other',
    ]);
  });

  it('answers 400 naming the field for a bad filter', async () => {
    const { api } = await workspaceWithKey();
    expectBadRequest(await api.get('/audit-events?action=webhook.exploded'), 'action');
    expectBadRequest(await api.get('/audit-events?since=yesterday'), 'since');
    expectBadRequest(await api.get('/audit-events?cursor=abc'), 'cursor');
    expectBadRequest(await api.get('/audit-events?limit=0'), 'limit');
  });

  it('adds no event when an Idempotency-Key replays a change', async () => {
    const { api, calculator } = await workspaceWithKey();
    const body = { url: 'https://example.com/once', calculators: [calculator.id] };
    const send = () => api.request('post', '/webhooks').set('Idempotency-Key', 'audit-once').send(body);
    const [a, b] = [await send(), await send()];
    expect(b.body).toEqual(a.body);
    expect((await events(api)).data.map((e) => e.action)).toEqual(['webhook.created']);
  });

  it('lets go of events older than AUDIT_RETENTION, and keeps the rest', async () => {
    const { api, workspace, calculator } = await workspaceWithKey();
    await registerWebhook(api, { url: 'https://example.com/kept', calculators: [calculator.id] });
    await t.dataSource.query(
      `INSERT INTO audit_events (id, workspace_id, occurred_at, action, actor_type, actor_id, target_type, target_id)
       VALUES ('oldauditevent0000000000a', $1, now() - interval '400 days', 'webhook.created', 'api_key', 'k', 'webhook', 'w')`,
      [workspace.id],
    );
    expect((await events(api)).data).toHaveLength(2);
    expect(await t.app.get(AuditEvents).purgeOnce()).toBeGreaterThanOrEqual(1);
    expect((await events(api)).data.map((e) => (e.changes as { url: string }).url)).toEqual([
      'https://example.com/kept',
    ]);
  });
});
