import { insertDeliveries, ownerOf } from '../support/delivery-rows.js';
import { setupWebhook, submit, useFastDeliveryApp } from '../support/delivery.js';
import { expectBadRequest, expectJson, type Client } from '../support/management-api.js';
import { waitFor } from '../support/receiver.js';
import type { TestApp } from '../support/test-app.js';

const CODES = [200, 204, 301, 404, 410, 429, 500, 502, 503, null];
const ROWS = 20_000;
// deliveries_status_code_log_idx as a partition names its own copy (workspace_id, the class expression, ...).
const STATUS_CODE_INDEX = /_workspace_id_expr_created_at_id_idx|deliveries_status_code_log_idx/;

// Delivery search (DESIGN 10): GET /deliveries by submission and by the last answer's status code or class,
// each answered from an index in the log's order.
describe('delivery search (GET /deliveries)', () => {
  const env = useFastDeliveryApp();
  let t: TestApp;
  let api: Client;
  let workspaceId: string;
  let submissionId: string;
  let otherSubmissionId: string;

  const ids = async (query: string): Promise<string[]> => {
    const res = await api.get(`/deliveries${query}`);
    expectJson(res, 200);
    return (res.body.data as { id: string }[]).map((d) => d.id);
  };
  /** The workspace's deliveries matching `where`, in the log's order (newest first, ties by id). */
  const expected = async (where: string, params: unknown[] = [], limit = 50) =>
    (
      (await t.dataSource.query(
        `SELECT id FROM deliveries WHERE workspace_id = $1 AND ${where} ORDER BY created_at DESC, id DESC LIMIT ${limit}`,
        [workspaceId, ...params],
      )) as { id: string }[]
    ).map((r) => r.id);

  beforeAll(async () => {
    t = env.t;
    const receiver = await env.startReceiver();
    const setup = await setupWebhook(t, receiver.url);
    api = setup.api;
    workspaceId = setup.workspace.id;
    const first = await submit(api, setup.calculator.id);
    const second = await submit(api, setup.calculator.id);
    submissionId = first.id;
    otherSubmissionId = second.id;
    await waitFor(async () => (await ids(`?status=succeeded`)).length === 2);
    // 20,000 ended deliveries of the first submission over the last hours, each with one of CODES as its
    // last answer (null: none came), and ANALYZE, so the planner sees a log worth an index.
    const base = Date.now() - 6 * 3_600_000;
    const rows = Array.from({ length: ROWS }, (_, i) => ({
      status: 'failed' as const,
      createdAt: new Date(base + i * 1_000),
    }));
    const inserted = await insertDeliveries(t, ownerOf(setup, first), rows);
    await t.dataSource.query(
      `UPDATE deliveries d SET last_status_code = c.code
       FROM unnest($1::varchar[], $2::int[]) AS c(id, code) WHERE d.id = c.id`,
      [inserted, inserted.map((_, i) => CODES[i % CODES.length])],
    );
    await t.dataSource.query('ANALYZE deliveries');
  });

  it('filters by the last answer’s status code, or its class', async () => {
    expect(await ids('?statusCode=503')).toEqual(await expected('last_status_code = 503'));
    expect(await ids('?statusCode=503')).toHaveLength(50);
    expect(await ids('?statusCode=5xx')).toEqual(await expected('last_status_code BETWEEN 500 AND 599'));
    expect(await ids('?statusCode=4xx&limit=100')).toEqual(
      await expected('last_status_code BETWEEN 400 AND 499', [], 100),
    );
    const twoHundreds = await ids('?statusCode=200&limit=100');
    expect(twoHundreds).toEqual(await expected('last_status_code = 200', [], 100));
    expect(twoHundreds).toHaveLength(100);
    expect(await ids('?statusCode=1xx')).toEqual([]);
    expect(await ids('?statusCode=418')).toEqual([]);
  });

  it('pages a status code with the cursor, as the log does', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `?statusCode=410&limit=100${cursor ? `&cursor=${cursor}` : ''}`;
      const res = await api.get(`/deliveries${query}`);
      expectJson(res, 200);
      seen.push(...(res.body.data as { id: string }[]).map((d) => d.id));
      cursor = res.body.nextCursor as string | null;
    } while (cursor);
    expect(seen).toEqual(await expected('last_status_code = 410', [], ROWS));
    expect(seen).toHaveLength(ROWS / CODES.length);
  });

  it('filters by submissionId, alone and with the other filters', async () => {
    expect(await ids(`?submissionId=${otherSubmissionId}`)).toEqual(
      await expected('submission_id = $2', [otherSubmissionId]),
    );
    expect(await ids(`?submissionId=${otherSubmissionId}`)).toHaveLength(1);
    expect(await ids(`?submissionId=${submissionId}&statusCode=500`)).toEqual(
      await expected('submission_id = $2 AND last_status_code = 500', [submissionId]),
    );
    const since = new Date(Date.now() - 600_000).toISOString();
    expect(await ids(`?submissionId=${submissionId}&statusCode=5xx&since=${since}`)).toEqual(
      await expected('submission_id = $2 AND last_status_code BETWEEN 500 AND 599 AND created_at >= $3', [
        submissionId,
        since,
      ]),
    );
  });

  it.each([
    ['statusCode=600', 'statusCode'],
    ['statusCode=099', 'statusCode'],
    ['statusCode=50', 'statusCode'],
    ['statusCode=5XX', 'statusCode'],
    ['statusCode=x00', 'statusCode'],
    ['statusCode=500&statusCode=503', 'statusCode'],
    ['submissionId=not-an-id', 'submissionId'],
  ])('rejects ?%s with a 400 naming the parameter', async (query, field) => {
    expectBadRequest(await api.get(`/deliveries?${query}`), field);
  });

  it('answers each search from an index: the log’s order where it can, never a scan of the log', async () => {
    const searches = [
      '?statusCode=503',
      '?statusCode=5xx',
      `?submissionId=${otherSubmissionId}`,
      '?status=failed',
      `?since=${new Date(Date.now() - 600_000).toISOString()}`,
    ];
    // The statement TypeORM sends for each search, explained as sent.
    const sent: { sql: string; parameters: unknown[] }[] = [];
    const logger = t.dataSource.logger;
    Object.assign(t.dataSource, {
      logger: { ...logger, logQuery: (sql: string, parameters: unknown[] = []) => sent.push({ sql, parameters }) },
    });
    try {
      for (const search of searches) expect((await ids(search)).length).toBeGreaterThan(0);
    } finally {
      Object.assign(t.dataSource, { logger });
    }
    const statements = sent.filter((s) => /FROM "deliveries"/.test(s.sql));
    expect(statements).toHaveLength(searches.length);
    const plans = await Promise.all(
      statements.map(async ({ sql, parameters }) =>
        (
          (await t.dataSource.query(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ${sql}`, parameters)) as {
            'QUERY PLAN': string;
          }[]
        )
          .map((r) => r['QUERY PLAN'])
          .join('\n'),
      ),
    );
    // Rows the scans read (returned, or read and dropped by a filter): a page's worth, not the log's.
    const visited = (plan: string) =>
      [...plan.matchAll(/Scan[^\n]*actual rows=(\d+) loops=(\d+)|Rows Removed by Filter: (\d+)/g)].reduce(
        (sum, m) => sum + (m[3] !== undefined ? Number(m[3]) : Number(m[1]) * Number(m[2])),
        0,
      );
    const [code, codeClass, submission, status, since] = plans;
    // Rows each sequential scan read: a partition of a few rows may be read whole (the week's just begun,
    // when the log straddles Monday 00:00 UTC), never one holding the log.
    const seqScanReads = (plan: string) =>
      plan.split(/\n(?=\s*->)/).flatMap((node) => {
        const scan = /Seq Scan[^\n]*actual rows=(\d+) loops=(\d+)/.exec(node);
        if (!scan) return [];
        const removed = /Rows Removed by Filter: (\d+)/.exec(node);
        return [Number(scan[1]) * Number(scan[2]) + Number(removed?.[1] ?? 0)];
      });
    for (const plan of plans) {
      // Only partitions of a few rows may be read without an index (the `since` search just after Monday
      // 00:00 UTC reads the new week's two rows and nothing else).
      if (!/Index Scan/.test(plan)) expect(Math.max(...seqScanReads(plan))).toBeLessThan(100);
      for (const reads of seqScanReads(plan)) expect(reads).toBeLessThan(1_000);
    }
    // A class, a status, a time: the log's order straight from the index, a page's worth of rows read.
    for (const plan of [codeClass, status, since]) expect(visited(plan)).toBeLessThan(1_000);
    expect(codeClass).toMatch(STATUS_CODE_INDEX);
    // An exact code is a filter within its class: at most the class's index entries are read (the planner
    // may sort those when they are few, as here).
    expect(code).toMatch(STATUS_CODE_INDEX);
    const indexReads = (plan: string) => visited(plan) - seqScanReads(plan).reduce((sum, n) => sum + n, 0);
    expect(indexReads(code)).toBeLessThanOrEqual((ROWS * 3) / CODES.length);
    expect(submission).toMatch(/_submission_id_idx|deliveries_submission_idx/);
  });
});
