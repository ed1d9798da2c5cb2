// search: delivery search (DESIGN 10) over a large log. One workspace's deliveries are inserted by SQL (the API
// would take hours to make ten million), spread over the current partition's time with the status codes a busy
// log has; after ANALYZE, each kind of search is asked through the API one request at a time, first pages and
// next pages, and timed from request to answer.
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { envInt, insertWorkspaces } from './setup.mjs';

const WEBHOOKS = 10;
const DELIVERIES_PER_SUBMISSION = WEBHOOKS;
// Per thousand deliveries: their last answer's code (null: none came, a timeout), and so their status.
const CODE_MIX = [
  [880, 200, 'succeeded'],
  [20, 204, 'succeeded'],
  [40, 500, 'failed'],
  [20, 503, 'failed'],
  [15, 404, 'failed'],
  [10, 429, 'failed'],
  [5, 410, 'failed'],
  [10, null, 'failed'],
];

export const searchSettings = () => ({
  deliveries: envInt('BENCH_SEARCH_DELIVERIES', 10_000_000),
  requestsPerKind: envInt('BENCH_SEARCH_REQUESTS', 200),
});

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

/** Inserts the log, then times each kind of search; { deliveries, insertSeconds, kinds: { name: {p50,p99,max,...} } }. */
export async function searchPhase({ db, apiUrl, log }) {
  const s = searchSettings();
  const [ws] = await insertWorkspaces(db, ['bench-search']);
  const webhooks = Array.from({ length: WEBHOOKS }, (_, i) => `bsearchhook${String(i).padStart(13, '0')}`);
  await db.query(
    `INSERT INTO webhooks (id, workspace_id, url, secret, name)
     SELECT w, $1, 'https://search.example.com/' || w, 'whsec_bench', w FROM unnest($2::varchar[]) AS w`,
    [ws.workspaceId, webhooks],
  );
  // The current partition's time, from its start to now: every row in one partition, as a week's log is.
  const {
    rows: [{ from }],
  } = await db.query(
    `SELECT max(lower_bound) AS from FROM (
       SELECT (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\(''([^'']+)''\\)'))[1]::timestamptz AS lower_bound
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'deliveries'::regclass) p
     WHERE lower_bound <= now()`,
  );
  const submissions = Math.ceil(s.deliveries / DELIVERIES_PER_SUBMISSION);
  const started = performance.now();
  log(
    `search: inserting ${submissions.toLocaleString('en-US')} submissions and ${s.deliveries.toLocaleString('en-US')} deliveries`,
  );
  await db.query(
    `INSERT INTO submissions (id, workspace_id, calculator_id, data, created_at, updated_at)
     SELECT 's' || substr(md5('s' || g), 1, 23), $1, $2, '{"answer":42}',
            $3::timestamptz + (now() - $3::timestamptz) * (g::float8 / $4), $3::timestamptz + (now() - $3::timestamptz) * (g::float8 / $4)
     FROM generate_series(1, $4) g`,
    [ws.workspaceId, ws.calculator, from, submissions],
  );
  // Each delivery's code from its position in a thousand, by CODE_MIX.
  const bounds = [];
  let at = 0;
  for (const [share, code, status] of CODE_MIX) bounds.push({ upTo: (at += share), code, status });
  const codeCase = bounds.map((b) => `WHEN g % 1000 < ${b.upTo} THEN ${b.code ?? 'NULL'}`).join(' ');
  const statusCase = bounds.map((b) => `WHEN g % 1000 < ${b.upTo} THEN '${b.status}'`).join(' ');
  const batch = 1_000_000;
  for (let first = 0; first < s.deliveries; first += batch) {
    await db.query(
      `INSERT INTO deliveries (id, workspace_id, webhook_id, submission_id, calculator_id, status, attempt_count,
                               max_attempts, last_status_code, created_at, updated_at, completed_at)
       SELECT 'd' || substr(md5('d' || g), 1, 23), $1, ($2::varchar[])[1 + g % ${WEBHOOKS}],
              's' || substr(md5('s' || (1 + g / ${DELIVERIES_PER_SUBMISSION})), 1, 23), $3,
              CASE ${statusCase} END, 1, 8, CASE ${codeCase} END, t, t, t
       FROM generate_series($4::int, $5::int) g,
            LATERAL (SELECT $6::timestamptz + (now() - $6::timestamptz) * (g::float8 / $7) AS t) x`,
      [ws.workspaceId, webhooks, ws.calculator, first, Math.min(s.deliveries, first + batch) - 1, from, s.deliveries],
    );
    log(`search: ${Math.min(s.deliveries, first + batch).toLocaleString('en-US')} deliveries inserted`);
  }
  await db.query('ANALYZE deliveries');
  await db.query('ANALYZE submissions');
  const insertSeconds = (performance.now() - started) / 1000;

  const pool = new Pool(apiUrl, { connections: 1 });
  const get = async (path) => {
    const t0 = performance.now();
    const res = await pool.request({ method: 'GET', path: `/api/v1${path}`, headers: { 'x-ac-api-key': ws.apiKey } });
    const body = await res.body.json();
    const ms = performance.now() - t0;
    if (res.statusCode !== 200)
      throw new Error(`search: GET ${path} answered ${res.statusCode}: ${JSON.stringify(body)}`);
    return { ms, body };
  };
  const hour = 3_600_000;
  const now = Date.now();
  const span = now - new Date(from).getTime();
  const pick = (n) => Math.floor(Math.random() * n);
  const kinds = {
    'statusCode=503': () => '?statusCode=503',
    'statusCode=5xx': () => '?statusCode=5xx',
    'statusCode=410 (0.5%)': () => '?statusCode=410',
    'status=failed': () => '?status=failed',
    webhookId: () => `?webhookId=${webhooks[pick(WEBHOOKS)]}`,
    'webhookId + statusCode=4xx': () => `?webhookId=${webhooks[pick(WEBHOOKS)]}&statusCode=4xx`,
    submissionId: () => `?submissionId=s${md5Prefix(1 + pick(submissions))}`,
    'since/until (an hour)': () => {
      const start = new Date(now - span * Math.random() - hour);
      return `?since=${start.toISOString()}&until=${new Date(start.getTime() + hour).toISOString()}`;
    },
  };
  const results = {};
  try {
    for (const [name, query] of Object.entries(kinds)) {
      const first = [];
      const next = [];
      for (let i = 0; i < s.requestsPerKind; i++) {
        const q = query();
        const page = await get(`/deliveries${q}`);
        first.push(page.ms);
        if (page.body.nextCursor) next.push((await get(`/deliveries${q}&cursor=${page.body.nextCursor}`)).ms);
      }
      const all = [...first, ...next].sort((a, b) => a - b);
      results[name] = {
        requests: all.length,
        p50: percentile(all, 50),
        p99: percentile(all, 99),
        max: all[all.length - 1],
      };
      log(`search: ${name}: p50 ${results[name].p50.toFixed(1)} ms, p99 ${results[name].p99.toFixed(1)} ms`);
    }
  } finally {
    await pool.close();
  }
  return { deliveries: s.deliveries, submissions, insertSeconds, kinds: results };
}

/** The id the insert gave submission n: 's' and the first 23 hex digits of md5('s' || n). */
function md5Prefix(n) {
  return createHash('md5').update(`s${n}`).digest('hex').slice(0, 23);
}
