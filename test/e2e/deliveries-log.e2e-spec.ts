import type { DeliveryStatus } from '../../src/delivery/delivery.entity.js';
import type { DeliveryResponse } from '../../src/delivery/log/delivery.serializer.js';
import { insertDeliveries, ownerOf } from '../support/delivery-rows.js';
import {
  DELIVERY_DETAIL_KEYS,
  DELIVERY_KEYS,
  getDelivery,
  setupWebhook,
  submit,
  useFastDeliveryApp,
} from '../support/delivery.js';
import {
  client,
  expectBadRequest,
  expectJson,
  expectNotAuthenticated,
  expectNotFound,
  keysOf,
  registerWebhook,
  removeWebhook,
  type Client,
} from '../support/management-api.js';
import { waitFor } from '../support/receiver.js';
import { createCalculator, type TestApp } from '../support/test-app.js';

interface Page {
  data: DeliveryResponse[];
  nextCursor: string | null;
}

describe('the workspace delivery log (GET /deliveries)', () => {
  const env = useFastDeliveryApp();
  let t: TestApp;
  beforeAll(() => {
    t = env.t;
  });

  const page = async (api: Client, query = ''): Promise<Page> => {
    const res = await api.get(`/deliveries${query}`);
    expectJson(res, 200);
    expect(keysOf(res.body)).toEqual(['data', 'nextCursor']);
    for (const d of res.body.data) expect(keysOf(d)).toEqual(DELIVERY_KEYS);
    return res.body as Page;
  };

  /** Every page, following nextCursor. */
  const allPages = async (api: Client, query: string): Promise<{ ids: string[]; pages: number }> => {
    const ids: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const sep = query ? '&' : '?';
      const res: Page = await page(api, cursor ? `${query}${sep}cursor=${cursor}` : query);
      ids.push(...res.data.map((d) => d.id));
      cursor = res.nextCursor;
      pages++;
    } while (cursor);
    return { ids, pages };
  };

  /** The workspace's deliveries as Postgres orders them: newest first, ties by id descending. */
  const expectedOrder = async (workspaceId: string, where = 'TRUE', params: unknown[] = []) => {
    const rows: { id: string }[] = await t.dataSource.query(
      `SELECT id FROM deliveries WHERE workspace_id = $1 AND ${where} ORDER BY created_at DESC, id DESC`,
      [workspaceId, ...params],
    );
    return rows.map((r) => r.id);
  };

  /** `rows` delivery rows on a fresh webhook: times from `base` one second apart, oldest first. */
  const seeded = async (statuses: DeliveryStatus[], base = Date.now() - 60_000) => {
    const receiver = await env.startReceiver();
    const setup = await setupWebhook(t, receiver.url);
    const submission = await submit(setup.api, setup.calculator.id);
    await waitFor(async () => (await page(setup.api)).data[0]?.status === 'succeeded');
    const owner = ownerOf(setup, submission);
    const times = statuses.map((_, i) => new Date(base + i * 1000));
    const ids = await insertDeliveries(
      t,
      owner,
      statuses.map((status, i) => ({ status, createdAt: times[i] })),
    );
    return { ...setup, owner, ids, times };
  };

  it('lists every webhook of the workspace newest first, ties by id, a removed webhook included', async () => {
    const ok = await env.startReceiver(() => ({ status: 200 }));
    const failing = await env.startReceiver(() => ({ status: 500 }));
    const { api, calculator, webhook, workspace } = await setupWebhook(t, ok.url);
    const other = await registerWebhook(api, { url: failing.url, calculators: [calculator.id] });
    for (let i = 0; i < 4; i++) await submit(api, calculator.id, { data: { i } });
    const ended = await waitFor(async () => {
      const res = await page(api);
      return res.data.length === 8 && res.data.every((d) => d.status !== 'pending') ? res.data : null;
    });
    expect(new Set(ended.map((d) => d.webhookId))).toEqual(new Set([webhook.id, other.id]));
    expect(ended.filter((d) => d.status === 'failed').map((d) => d.webhookId)).toEqual(
      ended.filter((d) => d.webhookId === other.id).map((d) => d.webhookId),
    );
    // Two deliveries at the very same instant (an hour ahead: a partition the migration made), their
    // attempts moved along: id descending decides.
    const tie = new Date(Math.floor(Date.now() / 1000) * 1000 + 3_600_000);
    await t.dataSource.query(`UPDATE deliveries SET created_at = $3 WHERE id IN ($1, $2)`, [
      ended[2].id,
      ended[5].id,
      tie,
    ]);
    await t.dataSource.query(`UPDATE delivery_attempts SET delivery_created_at = $3 WHERE delivery_id IN ($1, $2)`, [
      ended[2].id,
      ended[5].id,
      tie,
    ]);
    await removeWebhook(api, webhook.id);

    const listed = (await page(api)).data;
    expect(listed.map((d) => d.id)).toEqual(await expectedOrder(workspace.id));
    expect(listed.slice(0, 2).map((d) => d.id)).toEqual([ended[2].id, ended[5].id].sort().reverse());
    for (let i = 1; i < listed.length; i++) {
      const [a, b] = [listed[i - 1], listed[i]];
      expect(a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.id > b.id)).toBe(true);
    }
    expect(listed.filter((d) => d.webhookId === webhook.id)).toHaveLength(4);

    // The removed webhook's delivery, with its payload and attempts, where its own log now answers 404.
    const removedOne = listed.find((d) => d.webhookId === webhook.id)!;
    expectNotFound(await api.get(`/webhooks/${webhook.id}/deliveries/${removedOne.id}`));
    const res = await api.get(`/deliveries/${removedOne.id}`);
    expectJson(res, 200);
    expect(keysOf(res.body.data)).toEqual(DELIVERY_DETAIL_KEYS);
    expect(res.body.data.id).toBe(removedOne.id);
    expect(res.body.data.payload.webhookId).toBe(webhook.id);
    expect(res.body.data.payload.data.calculatorId).toBe(calculator.id);
    expect(res.body.data.attempts).toHaveLength(1);
    expect(res.body.data.attempts[0]).toMatchObject({ attemptNumber: 1, statusCode: 200, succeeded: true });

    // A live webhook's delivery reads the same as through its own log.
    const live = listed.find((d) => d.webhookId === other.id)!;
    const viaWorkspace = (await api.get(`/deliveries/${live.id}`)).body.data;
    expect(viaWorkspace).toEqual(await getDelivery(api, other.id, live.id));
    expect(viaWorkspace.attempts.length).toBeGreaterThan(1);
  });

  it.each(['pending', 'succeeded', 'failed', 'cancelled', 'skipped'] as const)(
    'filters by status=%s',
    async (status) => {
      const { api, workspace } = await seeded(['pending', 'succeeded', 'failed', 'cancelled', 'skipped', status]);
      const listed = (await page(api, `?status=${status}`)).data;
      expect(listed.map((d) => d.id)).toEqual(await expectedOrder(workspace.id, 'status = $2', [status]));
      expect(listed.length).toBeGreaterThanOrEqual(status === 'succeeded' ? 3 : 2);
      expect(listed.every((d) => d.status === status)).toBe(true);
    },
  );

  it('filters by webhookId and calculatorId, alone and together', async () => {
    const receiver = await env.startReceiver();
    const { api, workspace, calculator, webhook } = await setupWebhook(t, receiver.url);
    const second = await createCalculator(t, workspace.id, 'Second');
    const both = await registerWebhook(api, { url: receiver.url, calculators: [calculator.id, second.id] });
    await submit(api, calculator.id);
    await submit(api, second.id);
    await submit(api, second.id);
    await waitFor(async () => (await page(api)).data.length === 4);

    const ids = async (query: string) => (await page(api, query)).data.map((d) => d.id);
    expect(await ids(`?webhookId=${webhook.id}`)).toEqual(
      await expectedOrder(workspace.id, 'webhook_id = $2', [webhook.id]),
    );
    expect(await ids(`?webhookId=${both.id}`)).toHaveLength(3);
    expect(await ids(`?calculatorId=${second.id}`)).toEqual(
      await expectedOrder(workspace.id, 'calculator_id = $2', [second.id]),
    );
    expect(await ids(`?calculatorId=${second.id}`)).toHaveLength(2);
    expect(await ids(`?calculatorId=${calculator.id}&webhookId=${both.id}`)).toEqual(
      await expectedOrder(workspace.id, 'calculator_id = $2 AND webhook_id = $3', [calculator.id, both.id]),
    );
    expect(await ids(`?calculatorId=${calculator.id}&webhookId=${both.id}`)).toHaveLength(1);
    expect(await ids(`?webhookId=${second.id}`)).toEqual([]); // an id that is no webhook: nothing, not an error
  });

  it('filters by since (inclusive) and until (exclusive) on createdAt', async () => {
    const { api, ids, times } = await seeded(['failed', 'failed', 'failed', 'failed', 'failed']);
    const query = (q: string) => page(api, q).then((p) => p.data.map((d) => d.id));
    const iso = (d: Date) => d.toISOString();
    expect(await query(`?since=${iso(times[1])}&until=${iso(times[3])}`)).toEqual([ids[2], ids[1]]);
    expect(await query(`?since=${iso(times[3])}&status=failed`)).toEqual([ids[4], ids[3]]);
    expect(await query(`?until=${iso(times[1])}&status=failed`)).toEqual([ids[0]]);
    // Another zone's notation of the same instant.
    const plusTwo = new Date(times[4].getTime() + 2 * 3600_000).toISOString().replace('Z', '+02:00');
    expect(await query(`?since=${encodeURIComponent(plusTwo)}&status=failed`)).toEqual([ids[4]]);
  });

  it('pages with limit and cursor; pages stay stable while new deliveries arrive', async () => {
    const base = Date.now() - 3_600_000;
    const statuses = Array.from({ length: 130 }, () => 'succeeded' as const);
    const { api, workspace, calculator, owner } = await seeded(statuses, base);
    // Ties across page boundaries: ten rows share each of three instants.
    await t.dataSource.query(
      `UPDATE deliveries SET created_at = to_timestamp(floor(extract(epoch FROM created_at) / 10) * 10)
       WHERE webhook_id = $1 AND created_at < $2`,
      [owner.webhookId, new Date(base + 30_000)],
    );
    const before = await expectedOrder(workspace.id);
    expect(before).toHaveLength(131);

    const first = await page(api);
    expect(first.data).toHaveLength(50); // default limit
    expect(first.data.map((d) => d.id)).toEqual(before.slice(0, 50));
    expect((await page(api, '?limit=1000')).data).toHaveLength(100); // clamped
    expect((await page(api, '?limit=1')).data.map((d) => d.id)).toEqual(before.slice(0, 1));

    const firstSeven = await page(api, '?limit=7');
    expect(firstSeven.data.map((d) => d.id)).toEqual(before.slice(0, 7));
    // New deliveries arrive between pages; the next pages go on where the first stopped.
    for (let i = 0; i < 3; i++) await submit(api, calculator.id, { data: { late: i } });
    const rest: string[] = [];
    let cursor = firstSeven.nextCursor;
    let pages = 1;
    while (cursor) {
      const next: Page = await page(api, `?limit=7&cursor=${cursor}`);
      rest.push(...next.data.map((d) => d.id));
      cursor = next.nextCursor;
      pages++;
    }
    expect([...firstSeven.data.map((d) => d.id), ...rest]).toEqual(before);
    expect(pages).toBe(Math.ceil(131 / 7));

    // A fresh first page shows the new ones; exactly full pages end with a null cursor, not an empty page.
    const after = await allPages(api, '?limit=67');
    expect(after.ids).toEqual(await expectedOrder(workspace.id));
    expect(after.ids).toHaveLength(134);
    expect(after.pages).toBe(2);
    const exact = await allPages(api, '?limit=100&status=succeeded');
    expect(exact.ids.length).toBeGreaterThanOrEqual(131);
  });

  it('ignores unknown query parameters, as every list does', async () => {
    const { api } = await seeded(['failed', 'succeeded']);
    expect(await page(api, '?foo=bar&offset=1')).toEqual(await page(api));
  });

  describe('rejects bad queries with 400 naming the parameter, changing nothing', () => {
    let api: Client;
    let cursor: string;
    let otherCursor: string;
    beforeAll(async () => {
      const mine = await seeded(['failed', 'failed', 'failed']);
      api = mine.api;
      cursor = (await page(api, '?limit=1')).nextCursor!;
      const theirs = await seeded(['failed', 'failed']);
      otherCursor = (await page(theirs.api, '?limit=1')).nextCursor!;
      expect(cursor).toEqual(expect.any(String));
    });

    it.each([
      ['status=bogus', 'status'],
      ['status=failed&status=skipped', 'status'],
      ['webhookId=not-an-id', 'webhookId'],
      ['webhookId=a&webhookId=b', 'webhookId'],
      ['calculatorId=%00', 'calculatorId'],
      ['since=yesterday', 'since'],
      ['since=2024-01-15', 'since'],
      ['since=2024-01-15T10:30:00', 'since'],
      ['until=2024-02-30T00:00:00Z', 'until'],
      ['until=2024-01-15T25:00:00Z', 'until'],
      ['since=2024-01-15T10:30:00Z&until=2024-01-15T10:30:00Z', 'since'],
      ['since=2024-01-16T00:00:00Z&until=2024-01-15T00:00:00Z', 'since'],
      ['limit=0', 'limit'],
      ['limit=-1', 'limit'],
      ['limit=abc', 'limit'],
      ['cursor=', 'cursor'],
      ['cursor=garbage', 'cursor'],
      ['cursor=%00', 'cursor'],
    ])('?%s', async (query, field) => {
      expectBadRequest(await api.get(`/deliveries?${query}`), field);
    });

    it('a tampered cursor', async () => {
      const decoded = Buffer.from(cursor, 'base64url').toString();
      const [ms, id, digest] = decoded.split('.');
      const tampered = [
        `${ms.slice(0, -1)}${(Number(ms.at(-1)) + 1) % 10}.${id}.${digest}`,
        // Its first character changed (a digest may begin with x already).
        `${ms}.${id}.${digest[0] === 'x' ? 'y' : 'x'}${digest.slice(1)}`,
      ];
      for (const text of tampered) {
        expectBadRequest(await api.get(`/deliveries?cursor=${Buffer.from(text).toString('base64url')}`), 'cursor');
      }
      // The untouched one still works: the three seeded rows after the newest (the live delivery).
      expect((await page(api, `?cursor=${cursor}`)).data).toHaveLength(3);
    });

    it("another workspace's cursor", async () => {
      expectBadRequest(await api.get(`/deliveries?cursor=${otherCursor}`), 'cursor');
    });
  });

  describe('GET /deliveries/{deliveryId}', () => {
    it("answers 404 for another workspace's delivery and for an unknown id", async () => {
      const mine = await seeded(['failed']);
      const theirs = await seeded(['failed']);
      expectNotFound(await mine.api.get(`/deliveries/${theirs.ids[0]}`));
      expectNotFound(await mine.api.get('/deliveries/unknowndeliveryid0000000'));
      expectNotFound(await mine.api.get('/deliveries/%00'));
      const res = await mine.api.get(`/deliveries/${mine.ids[0]}`);
      expectJson(res, 200);
      expect(res.body.data).toMatchObject({ id: mine.ids[0], status: 'failed', attempts: [] });
    });
  });

  it('needs the key', async () => {
    const anonymous = client(t, '');
    expectNotAuthenticated(await anonymous.get('/deliveries'));
    expectNotAuthenticated(await anonymous.get('/deliveries/abc'));
  });
});
