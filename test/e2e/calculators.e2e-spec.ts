import type { CalculatorResponse } from '../../src/calculators/calculator.serializer.js';
import { isCuid2 } from '../../src/core/ids.js';
import {
  CALCULATOR_KEYS,
  client,
  expectBadRequest,
  expectJson,
  expectTimestamp,
  keysOf,
  listWebhooks,
  registerWebhook,
  type Client,
} from '../support/management-api.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

const TOTAL = 120;
const TIED_AT = '2024-01-15T10:30:00.000Z';

describe('GET /calculators', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  async function listCalculators(api: Client, query = ''): Promise<CalculatorResponse[]> {
    const res = await api.get(`/calculators${query}`);
    expectJson(res, 200);
    expect(keysOf(res.body)).toEqual(['data']);
    return res.body.data as CalculatorResponse[];
  }

  describe('shape', () => {
    it('returns { data: [] } for a workspace without calculators', async () => {
      const { key } = await createWorkspace(t);
      expect(await listCalculators(client(t, key))).toEqual([]);
    });

    it('returns exactly the 21 fields of spec 2.4 with their defaults', async () => {
      const { workspace, key } = await createWorkspace(t);
      const created = await createCalculator(t, workspace.id, 'Mortgage');
      const [calc] = await listCalculators(client(t, key));
      expect(keysOf(calc)).toEqual(CALCULATOR_KEYS);
      expect(calc).toEqual({
        id: created.id,
        createdAt: created.createdAt.toISOString(),
        updatedAt: created.updatedAt.toISOString(),
        name: 'Mortgage',
        slug: null,
        workspaceId: workspace.id,
        folderId: expect.any(String),
        status: 'draft',
        elements: [],
        layouts: { lg: [], md: [], sm: [] },
        variables: [],
        submitActions: {},
        themeId: expect.any(String),
        templateVisibility: null,
        templateCalculatorId: null,
        clonesCount: 0,
        impressionsCount: 0,
        lastImpressionAt: null,
        submissionsCount: 0,
        lastSubmissionAt: null,
        newElementCount: {},
      });
      expect(isCuid2(calc.id)).toBe(true);
      expectTimestamp(calc.createdAt);
      expectTimestamp(calc.updatedAt);
    });

    it('writes set timestamps as ISO 8601 UTC with milliseconds', async () => {
      const { workspace, key } = await createWorkspace(t);
      const created = await createCalculator(t, workspace.id);
      await t.dataSource.query(`UPDATE calculators SET last_impression_at = '2024-03-01T06:00:00Z' WHERE id = $1`, [
        created.id,
      ]);
      await t.dataSource.query(
        `INSERT INTO calculator_submission_counters (calculator_id, shard, count, last_submission_at)
         VALUES ($1, 0, 3, '2024-03-01T08:00:00.5+02:00')`,
        [created.id],
      );
      const [calc] = await listCalculators(client(t, key));
      expect(calc.lastSubmissionAt).toBe('2024-03-01T06:00:00.500Z');
      expect(calc.lastImpressionAt).toBe('2024-03-01T06:00:00.000Z');
      expect(calc.submissionsCount).toBe(3);
    });

    it('does not list a removed calculator, nor show it on a webhook bound to it', async () => {
      const { workspace, key } = await createWorkspace(t);
      const api = client(t, key);
      const keep = await createCalculator(t, workspace.id, 'Keep');
      const gone = await createCalculator(t, workspace.id, 'Gone');
      await registerWebhook(api, { url: 'https://receiver.example.com/h', calculators: [keep.id, gone.id] });
      await t.dataSource.query('UPDATE calculators SET removed_at = now() WHERE id = $1', [gone.id]);
      expect((await listCalculators(api)).map((c) => c.id)).toEqual([keep.id]);
      expect((await listWebhooks(api))[0].calculators).toEqual([{ id: keep.id, name: 'Keep' }]);
    });
  });

  describe('paging', () => {
    let api: Client;
    let all: CalculatorResponse[];

    beforeAll(async () => {
      const { workspace, key } = await createWorkspace(t);
      api = client(t, key);
      for (let i = 0; i < TOTAL; i++) await createCalculator(t, workspace.id, `Calculator ${i}`);
      // Half share one createdAt, so the id tie-break decides their order.
      await t.dataSource.query(
        `UPDATE calculators SET created_at = $2
         WHERE id IN (SELECT id FROM calculators WHERE workspace_id = $1 ORDER BY random() LIMIT $3)`,
        [workspace.id, TIED_AT, TOTAL / 2],
      );
      all = [...(await listCalculators(api, '?limit=100')), ...(await listCalculators(api, '?limit=100&offset=100'))];
    });

    it('orders by createdAt, then id', () => {
      expect(all).toHaveLength(TOTAL);
      const sorted = [...all].sort((a, b) =>
        a.createdAt === b.createdAt ? (a.id < b.id ? -1 : 1) : Date.parse(a.createdAt) - Date.parse(b.createdAt),
      );
      expect(all.map((c) => c.id)).toEqual(sorted.map((c) => c.id));
      expect(all.filter((c) => c.createdAt === TIED_AT)).toHaveLength(TOTAL / 2);
      expect(new Set(all.map((c) => c.id)).size).toBe(TOTAL);
    });

    it('returns the first 50 by default', async () => {
      expect(await listCalculators(api)).toEqual(all.slice(0, 50));
    });

    it('honours limit and offset', async () => {
      expect(await listCalculators(api, '?limit=3')).toEqual(all.slice(0, 3));
      expect(await listCalculators(api, '?offset=7')).toEqual(all.slice(7, 57));
      expect(await listCalculators(api, '?limit=5&offset=10')).toEqual(all.slice(10, 15));
      expect(await listCalculators(api, '?limit=1')).toEqual(all.slice(0, 1));
      expect(await listCalculators(api, '?offset=0')).toEqual(all.slice(0, 50));
      expect(await listCalculators(api, '?limit=003&offset=0007')).toEqual(all.slice(7, 10));
    });

    it('ignores unknown query parameters', async () => {
      const unknown = '?foo=bar&LIMIT=1&limit[]=1&offset[a]=2&__proto__=1&constructor=x&toString=1&cursor=x&status=x';
      expect(await listCalculators(api, unknown)).toEqual(all.slice(0, 50));
      expect(await listCalculators(api, `${unknown}&limit=2&offset=3`)).toEqual(all.slice(3, 5));
    });

    it('pages through the whole list in the same order as one listing, with no gaps or repeats', async () => {
      const paged: CalculatorResponse[] = [];
      for (let offset = 0; ; offset += 7) {
        const page = await listCalculators(api, `?limit=7&offset=${offset}`);
        paged.push(...page);
        if (page.length < 7) break;
      }
      expect(paged).toEqual(all);
    });

    it.each(['100', '101', '1000', '2147483648', '99999999999999999999', '9'.repeat(400)])(
      'clamps limit=%s to 100',
      async (limit) => {
        expect(await listCalculators(api, `?limit=${limit}`)).toEqual(all.slice(0, 100));
      },
    );

    it('returns an empty list for an offset at or past the end', async () => {
      expect(await listCalculators(api, `?offset=${TOTAL - 1}`)).toEqual(all.slice(TOTAL - 1));
      expect(await listCalculators(api, `?offset=${TOTAL}`)).toEqual([]);
      expect(await listCalculators(api, '?offset=100000')).toEqual([]);
      expect(await listCalculators(api, '?offset=2147483647')).toEqual([]);
    });

    it.each([
      ['limit=0', 'limit'],
      ['limit=-1', 'limit'],
      ['limit=1.5', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=', 'limit'],
      ['limit=1e2', 'limit'],
      ['limit=0x10', 'limit'],
      ['limit=1&limit=2', 'limit'],
      ['offset=-1', 'offset'],
      ['offset=1.5', 'offset'],
      ['offset=abc', 'offset'],
      ['offset=', 'offset'],
      ['offset=1&offset=2', 'offset'],
      ['offset=2147483648', 'offset'],
      ['offset=99999999999999999999', 'offset'],
    ])('rejects ?%s with 400 naming %s', async (query, field) => {
      const res = await api.get(`/calculators?${query}`);
      expectBadRequest(res, field);
    });
  });
});
