import { createId } from '@paralleldrive/cuid2';
import { submit, SUBMISSION_KEYS } from '../support/delivery.js';
import {
  client,
  expectBadRequest,
  expectJson,
  expectNotFound,
  keysOf,
  type Client,
} from '../support/management-api.js';
import { SUBMISSIONS_PAGE } from '../../src/submissions/submission.statements.js';
import {
  createCalculator,
  createTestApp,
  createWorkspace,
  databaseSession,
  type TestApp,
} from '../support/test-app.js';

// Sample data (DESIGN 11): a calculator's submissions newest first with cursor paging, one submission by id,
// and the filter tester (?filter=). The worker is off: no webhook is involved here.

interface Page {
  data: Record<string, unknown>[];
  nextCursor: string | null;
}

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

async function calculatorOf() {
  const { workspace, key } = await createWorkspace(t);
  const api = client(t, key);
  const calculator = await createCalculator(t, workspace.id);
  return { api, workspace, calculator };
}

async function page(api: Client, calculatorId: string, query = ''): Promise<Page> {
  const res = await api.get(`/calculators/${calculatorId}/submissions${query}`);
  expectJson(res, 200);
  expect(keysOf(res.body)).toEqual(['data', 'nextCursor']);
  for (const item of res.body.data) expect(keysOf(item)).toEqual(SUBMISSION_KEYS);
  return res.body as Page;
}

/** Every page from `query` on, following nextCursor. */
async function allPages(api: Client, calculatorId: string, query: string): Promise<Page[]> {
  const pages = [await page(api, calculatorId, query)];
  while (pages.at(-1)!.nextCursor) {
    const cursor = encodeURIComponent(pages.at(-1)!.nextCursor!);
    pages.push(await page(api, calculatorId, `${query}&cursor=${cursor}`));
  }
  return pages;
}

/** `count` submissions of the calculator written straight to the table, a millisecond apart, newest last. */
async function insertSubmissions(workspaceId: string, calculatorId: string, count: number, data: string) {
  await t.dataSource.query(
    `INSERT INTO submissions (id, workspace_id, calculator_id, finished, data, meta, created_at, updated_at)
     SELECT $4 || lpad(g::text, 16, '0'), $1, $2, true, ${data}, '{}',
            now() - interval '1 hour' + g * interval '1 ms', now() - interval '1 hour' + g * interval '1 ms'
     FROM generate_series(1, $3) g`,
    [workspaceId, calculatorId, count, `b${createId().slice(0, 7)}`],
  );
}

describe('GET /calculators/{calculatorId}/submissions', () => {
  it('lists the submissions newest first, each exactly as POST answered it', async () => {
    const { api, calculator } = await calculatorOf();
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await submit(api, calculator.id, { data: { i }, meta: { source: 'test' } }));
    const { data, nextCursor } = await page(api, calculator.id);
    expect(data).toEqual([...made].reverse());
    expect(nextCursor).toBeNull();
  });

  it('pages by cursor, 10 by default, and pages stay stable while submissions arrive', async () => {
    const { api, calculator } = await calculatorOf();
    const made = [];
    for (let i = 0; i < 12; i++) made.push(await submit(api, calculator.id, { data: { i } }));
    const first = await page(api, calculator.id);
    expect(first.data.map((s) => s.id)).toEqual(
      made
        .slice(2)
        .reverse()
        .map((s) => s.id),
    );
    expect(first.nextCursor).toEqual(expect.any(String));
    await submit(api, calculator.id, { data: { late: true } });
    const second = await page(api, calculator.id, `?cursor=${encodeURIComponent(first.nextCursor!)}`);
    expect(second.data.map((s) => s.id)).toEqual([made[1].id, made[0].id]);
    expect(second.nextCursor).toBeNull();

    const byTwo = await allPages(api, calculator.id, '?limit=2');
    expect(byTwo.map((p) => p.data.length)).toEqual([2, 2, 2, 2, 2, 2, 1]);
    expect(byTwo.flatMap((p) => p.data.map((s) => s.data))).toEqual([
      { late: true },
      ...made.map((s) => s.data).reverse(),
    ]);
  });

  it('keeps to [since, until) on createdAt', async () => {
    const { api, workspace, calculator } = await calculatorOf();
    await insertSubmissions(workspace.id, calculator.id, 5, `jsonb_build_object('g', g)`);
    const all = (await page(api, calculator.id)).data;
    const since = encodeURIComponent(all[3].createdAt as string);
    const until = encodeURIComponent(all[0].createdAt as string);
    const ranged = await page(api, calculator.id, `?since=${since}&until=${until}`);
    expect(ranged.data.map((s) => s.data)).toEqual([{ g: 4 }, { g: 3 }, { g: 2 }]);
  });

  it('clamps limit to 100 and refuses a limit, cursor, since or until it cannot read with a 400 naming it', async () => {
    const { api, workspace, calculator } = await calculatorOf();
    await insertSubmissions(workspace.id, calculator.id, 101, `'{}'::jsonb`);
    expect((await page(api, calculator.id, '?limit=500')).data).toHaveLength(100);
    for (const [query, field] of [
      ['?limit=0', 'limit'],
      ['?limit=-1', 'limit'],
      ['?limit=ten', 'limit'],
      ['?cursor=nope', 'cursor'],
      ['?since=yesterday', 'since'],
      ['?until=2024-01-01', 'until'],
      ['?since=2024-02-01T00:00:00.000Z&until=2024-01-01T00:00:00.000Z', 'since'],
    ]) {
      expectBadRequest(await api.get(`/calculators/${calculator.id}/submissions${query}`), field);
    }
    // A cursor of another workspace's list does not position this one.
    const other = await calculatorOf();
    await insertSubmissions(other.workspace.id, other.calculator.id, 3, `'{}'::jsonb`);
    const { nextCursor } = await page(other.api, other.calculator.id, '?limit=1');
    const res = await api.get(`/calculators/${calculator.id}/submissions?cursor=${encodeURIComponent(nextCursor!)}`);
    expectBadRequest(res, 'cursor');
  });

  it("answers 404 for another workspace's calculator, an unknown one, or an id that cannot be one", async () => {
    const { api } = await calculatorOf();
    const other = await calculatorOf();
    await submit(other.api, other.calculator.id);
    expectNotFound(await api.get(`/calculators/${other.calculator.id}/submissions`));
    expectNotFound(await api.get('/calculators/k3x9m2q8w7e4r5t6y1u0i9o8/submissions'));
    expectNotFound(await api.get('/calculators/not%20an%20id/submissions'));
  });
});

describe('GET /submissions/{submissionId}', () => {
  it("answers the submission as listed; another workspace's or an unknown id is a 404", async () => {
    const { api, calculator } = await calculatorOf();
    const made = await submit(api, calculator.id, { data: { loanAmount: 5 }, finished: false, meta: { a: 1 } });
    const res = await api.get(`/submissions/${made.id}`);
    expectJson(res, 200);
    expect(keysOf(res.body)).toEqual(['data']);
    expect(res.body.data).toEqual(made);

    const other = await calculatorOf();
    expectNotFound(await other.api.get(`/submissions/${made.id}`));
    expectNotFound(await api.get('/submissions/k3x9m2q8w7e4r5t6y1u0i9o8'));
    expectNotFound(await api.get('/submissions/%00'));
  });
});

describe('GET /calculators/{calculatorId}/submissions?filter=', () => {
  const filtered = (api: Client, calculatorId: string, filter: string, extra = '') =>
    page(api, calculatorId, `?filter=${encodeURIComponent(filter)}${extra}`);

  it('lists only the submissions the predicate matches; one on which it errors does not match', async () => {
    const { api, calculator } = await calculatorOf();
    const big = await submit(api, calculator.id, { data: { loanAmount: 250000 }, finished: true });
    const unfinished = await submit(api, calculator.id, { data: { loanAmount: 250000 }, finished: false });
    await submit(api, calculator.id, { data: { loanAmount: 5000 }, finished: true });
    await submit(api, calculator.id, { data: { loanAmount: 'lots' }, finished: true }); // a string: no match
    const filter = '$.finished == true && $.data.loanAmount > 100000';
    expect((await filtered(api, calculator.id, filter)).data).toEqual([big]);
    const strict = await filtered(api, calculator.id, 'strict $.data.loanAmount > 100000');
    expect(strict.data).toEqual([unfinished, big]);
    const since = `$.createdAt >= "${big.createdAt}" && $.calculatorId == "${calculator.id}"`;
    expect((await filtered(api, calculator.id, since)).data).toHaveLength(4);
    expect((await filtered(api, calculator.id, `$.id == "${big.id}"`)).data).toEqual([big]);
  });

  it('looks at most 1,000 submissions a page, and its cursor leads on past them', async () => {
    const { api, workspace, calculator } = await calculatorOf();
    // 2,500 submissions; only g = 7 and g = 1,200 match, 1,300 and 1 newest-first positions apart.
    await insertSubmissions(workspace.id, calculator.id, 2500, `jsonb_build_object('g', g)`);
    const pages = await allPages(
      api,
      calculator.id,
      `?filter=${encodeURIComponent('$.data.g == 7 || $.data.g == 1200')}`,
    );
    expect(pages.map((p) => p.data.map((s) => s.data))).toEqual([[], [{ g: 1200 }], [{ g: 7 }]]);
    expect(pages.at(-1)!.nextCursor).toBeNull();
  });

  it.each([
    ['does not parse', '$.finished ===', /syntax error/],
    ['is empty', '', /invalid input syntax for type jsonpath/],
    ['is a path, not a predicate', '$.finished', /must be a predicate.*single boolean result is expected/],
    ['filters instead of testing', '$ ? (@.finished == true)', /must be a predicate/],
    ['names a variable', '$.data.x == $limit', /could not find jsonpath variable "limit"/],
    ['has a bad regular expression', '$.data.name like_regex "("', /invalid regular expression/],
    ['is longer than 1,000 characters', `$.data.x == "${'a'.repeat(1000)}"`, /1000 characters/],
    ['holds a NUL', '$.a == "\u0000"', /NUL/],
  ])('refuses a filter that %s with a 400 naming filter and no SQL', async (_case, filter, message) => {
    const { api, calculator } = await calculatorOf();
    const res = await api.get(`/calculators/${calculator.id}/submissions?filter=${encodeURIComponent(filter)}`);
    const error = expectBadRequest(res, 'filter');
    const detail = error
      .details!.filter((d) => d.field === 'filter')
      .map((d) => d.message)
      .join('; ');
    expect(detail).toMatch(message);
    expect(JSON.stringify(res.body)).not.toMatch(/SELECT|jsonb_path_match|\$1|LINE \d/);
  });
});

describe('the listing reads its index', () => {
  it('at 200,000 submissions a deep page or time range is an index range scan of its own rows, with no sort', async () => {
    const { workspace, calculator } = await calculatorOf();
    const other = await createCalculator(t, workspace.id, 'Other');
    // A session of the test's own: the bulk load must not meet the app's statement timeout.
    const session = await databaseSession(t);
    try {
      await session.query(
        `INSERT INTO submissions (id, workspace_id, calculator_id, finished, data, meta, created_at, updated_at)
         SELECT 'plan' || lpad(g::text, 20, '0'), $1, CASE WHEN g % 4 = 0 THEN $2 ELSE $3 END, g % 2 = 0,
                jsonb_build_object('loanAmount', g), '{}', now() - g * interval '1 s', now() - g * interval '1 s'
         FROM generate_series(1, 200000) g`,
        [workspace.id, calculator.id, other.id],
      );
      await session.query('ANALYZE submissions');
      // The statement as the service runs it (its generic plan, whatever the parameters), 10,000 rows deep.
      await session.query(`SET plan_cache_mode = force_generic_plan`);
      await session.query(`PREPARE page_plan AS ${SUBMISSIONS_PAGE.text}`);
      const {
        rows: [deep],
      } = await session.query(
        `SELECT created_at, id FROM submissions WHERE calculator_id = $1
         ORDER BY created_at DESC, id DESC OFFSET 10000 LIMIT 1`,
        [calculator.id],
      );
      // Ids are CUID2s and times ISO strings: safe as literals (EXECUTE under EXPLAIN takes no binds).
      const at = (deep.created_at as Date).toISOString();
      const hourBefore = new Date((deep.created_at as Date).getTime() - 3_600_000).toISOString();
      for (const [bounds, what] of [
        [`'${at}', '${deep.id}', '-infinity'`, 'a cursor 10,000 rows deep'],
        [`'${at}', '', '${hourBefore}'`, 'since/until, the hour before that row'],
      ]) {
        const {
          rows: [{ 'QUERY PLAN': plan }],
        } = await session.query(
          `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
           EXECUTE page_plan('${calculator.id}', '${workspace.id}', ${bounds}, NULL, 11, 11)`,
        );
        const nodes = flatten(plan[0].Plan);
        const scans = nodes.filter((n) => n['Relation Name'] === 'submissions');
        expect({ what, scans: scans.map((n) => [n['Node Type'], n['Index Name']]) }).toEqual({
          what,
          scans: [['Index Scan', 'submissions_calculator_page_idx']],
        });
        expect(scans[0]['Index Cond']).toMatch(/ROW\(created_at, \(id\)::text\) < ROW/);
        expect(scans[0]['Actual Rows']).toBe(11);
        // Its own rows' pages and no more: a scan that started at the newest would read hundreds.
        expect((scans[0]['Shared Hit Blocks'] as number) + (scans[0]['Shared Read Blocks'] as number)).toBeLessThan(30);
        expect(nodes.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
        // What is sorted is the page (the CTE's rows), never the calculator's submissions.
        const sorted = nodes.filter((n) => n['Node Type'] === 'Sort').map((n) => n['Actual Rows'] as number);
        expect(sorted.every((rows) => rows <= 11)).toBe(true);
      }
    } finally {
      await session.end();
    }
  }, 120_000);
});

type PlanNode = Record<string, unknown> & { Plans?: PlanNode[] };
const flatten = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(flatten)];
