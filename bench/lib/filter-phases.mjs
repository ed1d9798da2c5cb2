// Sample data and filters (DESIGN 11), two phases:
// - submissions-filters: POST submissions to a calculator with 3 webhooks that each have a filter, against a
//   calculator of the same workspace with 3 webhooks and none, in alternating rounds of the same run. Every
//   filter matches every submission, so both make the same 3 deliveries and the difference is the filters'
//   own work: parsing and evaluating them, and writing their counts.
// - submissions-list: GET /calculators/{id}/submissions with 10,000,000 submissions in the table (inserted by
//   SQL, the index built after), one request at a time through the API, first and deep pages.
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { apiRequest, measure } from './http-bench.mjs';
import { CpuProbe, machineBusy } from './processes.mjs';
import { postgresBackends } from './pg-activity.mjs';
import { envInt, insertWorkspaces } from './setup.mjs';

export const FILTER_PHASE_KEYS = ['submissions-filters', 'submissions-list'];

const BODY = { data: { answer: 42, email: 'bench@example.com', total: 123.45 }, finished: true };
// Three kinds of predicate a user writes; each matches BODY.
const FILTERS = [
  '$.finished == true && $.data.total > 100',
  '$.data.email like_regex "@example\\\\.com$"',
  'exists($.data.answer) && $.data.answer == 42',
];

export const filterSettings = () => ({
  rounds: envInt('BENCH_FILTER_ROUNDS', 3),
  submissions: envInt('BENCH_LIST_SUBMISSIONS', 10_000_000),
  requestsPerKind: envInt('BENCH_LIST_REQUESTS', 200),
});

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Calculators added to a workspace made by insertWorkspaces, by SQL. */
async function addCalculators(db, workspaceId, ids) {
  await db.query(
    `INSERT INTO calculators (id, workspace_id, folder_id, name, status)
     SELECT c, $2, 'benchfolder', c, 'published' FROM unnest($1::varchar[]) AS c`,
    [ids, workspaceId],
  );
}

const calculatorIds = (prefix, n) => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(12, '0')}`);

/** Submissions/s to the filtered calculator against the plain one, rounds alternating. */
async function filteredSubmissions({ db, apiUrl, dbName, redisPid, apiPid, log, settings }) {
  const s = filterSettings();
  const [ws] = await insertWorkspaces(db, ['bench-filters']);
  const [filtered] = calculatorIds('bfiltered', 1);
  await addCalculators(db, ws.workspaceId, [filtered]);
  const plain = ws.calculator;
  const call = (method, path, body) => apiRequest(apiUrl, ws.apiKey, method, `/api/v1${path}`, body);
  for (let i = 0; i < 3; i++) {
    await call('POST', '/webhooks', { url: `https://plain.example.com/${i}`, calculators: [plain] });
    const { data } = await call('POST', '/webhooks', {
      url: `https://filtered.example.com/${i}`,
      calculators: [filtered],
    });
    await call('PATCH', `/webhooks/${data.id}`, { filter: FILTERS[i] });
  }
  const run = async (calculatorId) => {
    const options = {
      url: apiUrl,
      requests: [
        {
          method: 'POST',
          path: `/api/v1/calculators/${calculatorId}/submissions`,
          headers: { 'x-ac-api-key': ws.apiKey, 'content-type': 'application/json' },
          body: JSON.stringify(BODY),
        },
      ],
    };
    if (settings.warmupSec > 0) await measure(options, { ...settings, durationSec: settings.warmupSec, warmupSec: 0 });
    await db.query('ANALYZE');
    const cpu = new CpuProbe(async () => ({
      api: [apiPid()],
      postgres: await postgresBackends(db, dbName),
      redis: redisPid ? [redisPid] : [],
    }));
    return measure(options, { ...settings, warmupSec: 0 }, cpu);
  };
  const rounds = [];
  for (let round = 1; round <= s.rounds; round++) {
    const none = await run(plain);
    const withFilters = await run(filtered);
    log(
      `submissions-filters round ${round}: ${none.requestsPerSec} req/s without filters, ${withFilters.requestsPerSec} with`,
    );
    rounds.push({ round, none, filtered: withFilters, ratio: withFilters.requestsPerSec / none.requestsPerSec });
  }
  const {
    rows: [counts],
  } = await db.query(
    `SELECT sum(passed)::float8 AS passed, sum(held_back)::float8 AS held_back FROM webhook_filter_counters c
     JOIN webhooks w ON w.id = c.webhook_id WHERE w.workspace_id = $1`,
    [ws.workspaceId],
  );
  const invalid = rounds.some((r) => r.none.non2xx + r.none.errors + r.filtered.non2xx + r.filtered.errors > 0);
  return {
    filters: FILTERS,
    rounds,
    ratio: median(rounds.map((r) => r.ratio)),
    counted: { passed: counts.passed, heldBack: counts.held_back },
    invalid: invalid ? 'non-2xx answers or errors in a round' : null,
  };
}

// The big calculator holds half of the submissions, 99 others the rest; a minute apart from the big one's
// newest back, so its pages are deep in time as well as in rows.
const OTHER_CALCULATORS = 99;
// Requests of each kind before the timed ones: more than the five custom plans Postgres makes per connection.
const WARM_UP_REQUESTS = 20;

/** The cursor the api gives for a position (src/core/http/log-cursor.ts's encodeCursor, same digest). */
function cursorOf(workspaceId, createdAt, id) {
  const ms = createdAt.getTime();
  const digest = createHash('sha256').update(`${workspaceId}.${ms}.${id}`).digest('base64url').slice(0, 16);
  return Buffer.from(`${ms}.${id}.${digest}`).toString('base64url');
}

async function listing({ db, apiUrl, log }) {
  const s = filterSettings();
  const [ws] = await insertWorkspaces(db, ['bench-list']);
  const big = ws.calculator;
  const others = calculatorIds('blist', OTHER_CALCULATORS);
  await addCalculators(db, ws.workspaceId, others);
  const started = performance.now();
  log(`submissions-list: inserting ${s.submissions.toLocaleString('en-US')} submissions, the index built after`);
  // One statement, ids in key order (the primary key's index grows at its end); the listing's index after.
  await db.query('DROP INDEX submissions_calculator_page_idx');
  await db.query(
    `INSERT INTO submissions (id, workspace_id, calculator_id, finished, data, meta, created_at, updated_at)
     SELECT 'l' || lpad(g::text, 23, '0'), $1,
            CASE WHEN g % 2 = 0 THEN $2 ELSE ($3::varchar[])[1 + (g / 2) % $4] END, g % 3 <> 0,
            jsonb_build_object('loanAmount', g % 500000, 'email', 'user' || g || '@example.com', 'term', 12 + g % 348),
            '{}', now() - (($5 - g) * interval '250 ms'), now() - (($5 - g) * interval '250 ms')
     FROM generate_series(1, $5) g`,
    [ws.workspaceId, big, others, OTHER_CALCULATORS, s.submissions],
  );
  const inserted = performance.now();
  await db.query(
    'CREATE INDEX submissions_calculator_page_idx ON submissions (calculator_id, created_at DESC, id DESC)',
  );
  // As a running service's table is: vacuumed, so autovacuum's pass over the new rows does not run
  // beside the measured requests.
  await db.query('VACUUM (ANALYZE) submissions');
  const indexed = performance.now();
  log(
    `submissions-list: inserted in ${((inserted - started) / 1000).toFixed(0)} s, indexed in ${((indexed - inserted) / 1000).toFixed(0)} s`,
  );
  const {
    rows: [{ total }],
  } = await db.query('SELECT count(*)::int AS total FROM submissions');
  // Positions in the big calculator to start deep pages from, sampled from the table's pages.
  const { rows: positions } = await db.query(
    `SELECT created_at, id FROM submissions TABLESAMPLE SYSTEM (0.1) WHERE calculator_id = $1 LIMIT 1000`,
    [big],
  );

  const pool = new Pool(apiUrl, { connections: 1 });
  const get = async (path) => {
    const t0 = performance.now();
    const res = await pool.request({ method: 'GET', path: `/api/v1${path}`, headers: { 'x-ac-api-key': ws.apiKey } });
    const body = await res.body.json();
    const ms = performance.now() - t0;
    if (res.statusCode !== 200)
      throw new Error(`submissions-list: GET ${path} answered ${res.statusCode}: ${JSON.stringify(body)}`);
    if (body.data.length === 0 && !path.includes('filter=')) throw new Error(`submissions-list: GET ${path} was empty`);
    return ms;
  };
  const pick = (list) => list[Math.floor(Math.random() * list.length)];
  const deep = () => {
    const p = pick(positions);
    return `&cursor=${cursorOf(ws.workspaceId, p.created_at, p.id)}`;
  };
  const hourBefore = (p) =>
    `&since=${new Date(p.created_at.getTime() - 3_600_000).toISOString()}&until=${p.created_at.toISOString()}`;
  const filter = encodeURIComponent('$.finished == true && $.data.loanAmount > 250000');
  const kinds = {
    'first page (limit 10, the default)': () => `/calculators/${big}/submissions`,
    'first page, limit=100': () => `/calculators/${big}/submissions?limit=100`,
    'a deep page (cursor at a random position)': () => `/calculators/${big}/submissions?limit=10${deep()}`,
    'since/until (the hour before a random position)': () =>
      `/calculators/${big}/submissions?limit=10${hourBefore(pick(positions))}`,
    "a smaller calculator's first page": () => `/calculators/${pick(others)}/submissions`,
    'one submission by id': () => `/submissions/${pick(positions).id}`,
  };
  const tester = {
    'filter tester (?filter=, up to 1,000 looked at)': () =>
      `/calculators/${big}/submissions?filter=${filter}${deep()}`,
  };
  const results = {};
  try {
    for (const [name, path] of Object.entries({ ...kinds, ...tester })) {
      // Untimed: the api's connections plan the statement and settle on its generic plan first.
      for (let i = 0; i < WARM_UP_REQUESTS; i++) await get(path());
      const times = [];
      for (let i = 0; i < s.requestsPerKind; i++) times.push(await get(path()));
      times.sort((a, b) => a - b);
      results[name] = {
        requests: times.length,
        p50: percentile(times, 50),
        p99: percentile(times, 99),
        max: times.at(-1),
        tester: name in tester,
      };
      log(`submissions-list: ${name}: p50 ${results[name].p50.toFixed(1)} ms, p99 ${results[name].p99.toFixed(1)} ms`);
    }
  } finally {
    await pool.close();
  }
  return {
    submissions: s.submissions,
    inTable: total,
    bigCalculator: s.submissions / 2,
    insertSeconds: (inserted - started) / 1000,
    indexSeconds: (indexed - inserted) / 1000,
    kinds: results,
  };
}

/** The phase that writes each key of results.filters. */
export const FILTER_PHASE_OF = { submissions: 'submissions-filters', list: 'submissions-list' };

/** Runs the phases `runs` selects, into results.filters. */
export async function runFilterPhases(ctx, runs, results) {
  results.filters = results.filters ?? {};
  if (runs(FILTER_PHASE_OF.submissions)) {
    ctx.log('submissions-filters: 3 webhooks with filters against 3 without, alternating rounds');
    results.machine.busyBefore[FILTER_PHASE_OF.submissions] = await machineBusy();
    results.filters.submissions = await filteredSubmissions(ctx);
  }
  if (runs(FILTER_PHASE_OF.list)) {
    results.machine.busyBefore[FILTER_PHASE_OF.list] = await machineBusy();
    results.filters.list = await listing(ctx);
  }
}

const fmt = (n, digits = 0) =>
  n === null || n === undefined || Number.isNaN(n)
    ? 'n/a'
    : n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

export function filterTargets(results) {
  const f = results.filters ?? {};
  const listed = f.list ? Object.values(f.list.kinds).filter((k) => !k.tester) : [];
  const slowest = listed.length ? Math.max(...listed.map((k) => k.p99)) : null;
  const ratio = f.submissions?.ratio ?? null;
  return [
    {
      name: 'submissions/s to a calculator with 3 webhooks, each with a filter, against the same with none (median of rounds)',
      value: ratio === null ? null : ratio * 100,
      target: '>= 90%',
      ceiling: null,
      ratio: null,
      invalid: f.submissions?.invalid ?? null,
      pass: ratio === null ? null : f.submissions.invalid ? false : ratio >= 0.9,
    },
    {
      name: `GET /calculators/{id}/submissions p99 (the slowest kind), ${fmt(f.list?.inTable ?? 10_000_000)} submissions in the table`,
      value: slowest,
      target: '< 50 ms',
      ceiling: null,
      ratio: null,
      invalid: null,
      pass: slowest === null ? null : slowest < 50,
    },
  ];
}

export function filterSection(results) {
  const f = results.filters ?? {};
  const lines = ['### Sample data and filters (submissions-filters, submissions-list)', ''];
  if (f.submissions) {
    const r = f.submissions;
    lines.push(
      `POST submissions (${results.settings.connections} connections, ${results.settings.warmupSec} s warm-up then ` +
        `${results.settings.durationSec} s each) to a calculator with 3 webhooks and no filter, then to one with 3 ` +
        `webhooks whose filters (\`${r.filters.join('`, `')}\`) match every submission, so both make 3 deliveries; ` +
        `in ${r.rounds.length} alternating rounds, no worker running.`,
      '',
      '| round | req/s, no filter | req/s, 3 filters | ratio | api CPU ms/req, no filter / filters | Postgres CPU ms/req, no filter / filters |',
      '|---:|---:|---:|---:|---:|---:|',
      ...r.rounds.map(
        (x) =>
          `| ${x.round} | ${fmt(x.none.requestsPerSec)} | ${fmt(x.filtered.requestsPerSec)} | ${fmt(x.ratio * 100, 1)}% | ` +
          `${fmt(x.none.cpuMsPerRequest?.api, 3)} / ${fmt(x.filtered.cpuMsPerRequest?.api, 3)} | ` +
          `${fmt(x.none.cpuMsPerRequest?.postgres, 3)} / ${fmt(x.filtered.cpuMsPerRequest?.postgres, 3)} |`,
      ),
      '',
      `Counted by the filters: ${fmt(r.counted.passed)} passed, ${fmt(r.counted.heldBack)} held back.`,
      '',
    );
  }
  if (f.list) {
    const l = f.list;
    lines.push(
      `${fmt(l.inTable)} submissions in the table (${fmt(l.submissions)} inserted by one INSERT ... SELECT generate_series ` +
        `in ${fmt(l.insertSeconds)} s, the listing's index built after and the table vacuumed in ${fmt(l.indexSeconds)} s; ` +
        `half of them one calculator's), then each kind of request, one at a time through the API, after 20 untimed:`,
      '',
      '| request | requests | p50 ms | p99 ms | max ms |',
      '|---|---:|---:|---:|---:|',
      ...Object.entries(l.kinds).map(
        ([name, k]) => `| ${name} | ${k.requests} | ${fmt(k.p50, 1)} | ${fmt(k.p99, 1)} | ${fmt(k.max, 1)} |`,
      ),
      '',
      'The target is on the listing itself (the slowest of the kinds above but the filter tester, which evaluates the ' +
        'predicate on up to 1,000 submissions a page by design).',
      '',
    );
  }
  return lines.length > 2 ? lines.join('\n') : '';
}
