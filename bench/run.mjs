// `npm run bench`: the whole benchmark, end to end. Builds if needed, starts the built api against a
// database and queue prefix of its own, measures the API, the ceilings and delivery, writes
// bench/results/latest.json and BENCHMARKS.md, and always stops its processes and drops its database.
import { Redis } from 'ioredis';
import { Queue } from 'bullmq';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { Pool, request } from 'undici';
import { ENGINE_PHASE_KEYS, runEnginePhases } from './lib/engine-phases.mjs';
import { FILTER_PHASE_KEYS, runFilterPhases } from './lib/filter-phases.mjs';
import { apiRequest, measure, postSubmissions } from './lib/http-bench.mjs';
import {
  busyBetween,
  CpuProbe,
  freePort,
  machineBusy,
  machineCpu,
  procCpuMs,
  RssSampler,
  setUpCleanup,
  spawnNode,
  stopProcess,
  waitForHttp,
} from './lib/processes.mjs';
import { OtlpSink } from './lib/otlp-sink.mjs';
import { postgresBackends } from './lib/pg-activity.mjs';
import { BenchReceiver } from './lib/receiver.mjs';
import { unpartition } from './lib/unpartition.mjs';
import { evaluateTargets, loadBaseline, renderMarkdown } from './lib/report.mjs';
import { codeInfo, commandLine, machineInfo } from './lib/run-info.mjs';
import {
  createDatabase,
  createWorkspace,
  deleteRedisKeys,
  envInt,
  IMAGE_NODE_OPTIONS,
  logger,
  PG_URL,
  productEnv,
  REDIS_URL,
} from './lib/setup.mjs';

const settings = {
  connections: envInt('BENCH_CONNECTIONS', 50),
  warmupSec: envInt('BENCH_WARMUP', 3),
  durationSec: envInt('BENCH_DURATION', 10),
  deliveries: envInt('BENCH_DELIVERIES', 20_000),
  latencyRate: envInt('BENCH_LATENCY_RATE', 300),
  latencyDurationSec: envInt('BENCH_LATENCY_DURATION', 10),
  workerConcurrency: envInt('BENCH_WORKER_CONCURRENCY', null), // null: the service's default
  logLevel: process.env.BENCH_LOG_LEVEL || 'info', // the service's default: a line per request and per attempt
  rateLimitPerMinute: envInt('BENCH_RATE_LIMIT_PER_MINUTE', 1_000_000),
  profile: process.env.BENCH_PROFILE === '1',
  /**
   * `deliveries` and `delivery_attempts` rebuilt unpartitioned once the api has migrated them, to measure
   * what partitioning costs the whole hot path (alternate with a run without it); never for the headline.
   */
  unpartitioned: process.env.BENCH_UNPARTITIONED === '1',
  /** Wait up to this many seconds for the machine to be quiet (< 25% CPU busy over 5 s) before starting. */
  waitQuietSec: envInt('BENCH_WAIT_QUIET', 0),
  /** Rounds of the tracing phase, each one run with tracing off and one with it on. */
  tracingRounds: envInt('BENCH_TRACING_ROUNDS', 2),
  /** A third setting of the tracing phase, when set: tracing on, recording this share of the traces (0 to 1). */
  tracingSampleRatio: process.env.BENCH_TRACING_SAMPLE_RATIO || null,
  /** NODE_OPTIONS for the api, the workers and the NestJS ceiling alike; the image's unless set (empty: none). */
  nodeOptions: process.env.BENCH_NODE_OPTIONS ?? IMAGE_NODE_OPTIONS,
  /**
   * Node flags for the api and the workers that NODE_OPTIONS refuses, space-separated: `--trace-gc`, or
   * `--require <file>` of a heap sampler, say; with BENCH_CHILD_LOGS=<dir> their output is kept.
   */
  nodeFlags: process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? [],
};

// The service's WORKER_CONCURRENCY default (src/core/config/config.ts), for the BullMQ ceiling's like-for-like run.
const SERVICE_DEFAULT_CONCURRENCY = 500;
// The service's DATABASE_POOL_SIZE default, for the bare app's pg pool.
const SERVICE_DEFAULT_POOL_SIZE = 10;

const PHASE_KEYS = [
  'ceiling-nest',
  'ceiling-bullmq',
  'me',
  'webhooks-list',
  'calculators',
  'log-cost',
  'webhook-get',
  'webhook-create',
  'submissions',
  'submissions-one',
  'heap-flags',
  'delivery-1',
  'latency',
  'delivery-2',
  'tracing',
  ...ENGINE_PHASE_KEYS,
  ...FILTER_PHASE_KEYS,
];
const only = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',').map((s) => s.trim())) : null;
for (const key of only ?? []) {
  if (!PHASE_KEYS.includes(key)) throw new Error(`BENCH_ONLY: unknown phase "${key}"; known: ${PHASE_KEYS.join(', ')}`);
}
const runs = (key) => !only || only.has(key);

const HOT_CALCULATORS = 6; // each bound to exactly 3 webhooks: a submission to one creates 3 deliveries
const WEBHOOKS = 20;
const CALCULATORS = 50;
const FANOUT = 3;
const CREATE_CONCURRENCY = 32;
const SUBMISSION_BODY = { data: { answer: 42, email: 'bench@example.com', total: 123.45 }, finished: true };

const id = Date.now().toString(36);
const dbName = `cw_bench_${id}`;
const queuePrefix = `cwbench_${id}`;
const ceilingPrefix = `cwbenchceil_${id}`;
const profileDir = `bench/results/profiles/${id}`;
const log = logger('bench');

const receiver = new BenchReceiver();
const sampler = new RssSampler(200);
const cleanups = [() => sampler.stop()]; // the cleanup runs its steps last first: this one runs last
let db; // pg client on the bench database
let apiProcess;
let redisPid = null; // redis-server's pid, for its CPU time (when it runs on this machine)
let apiUrl;
let apiMetricsUrl;
let apiKey;

function benchEnv(extra) {
  return productEnv(
    { dbName, queuePrefix },
    {
      LOG_LEVEL: settings.logLevel,
      // Both limiters stay in the path (per IP and per key: one Redis round trip per request) but never
      // refuse here: the load generator is one IP with one key.
      RATE_LIMIT_PER_MINUTE: String(settings.rateLimitPerMinute),
      RATE_LIMIT_PER_IP_PER_MINUTE: String(settings.rateLimitPerMinute),
      ...(settings.workerConcurrency ? { WORKER_CONCURRENCY: String(settings.workerConcurrency) } : {}),
      ...(settings.nodeOptions ? { NODE_OPTIONS: settings.nodeOptions } : {}),
      ...extra,
    },
  );
}

const childNodeFlags = (role) => [
  ...settings.nodeFlags,
  ...(settings.profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}/${role}`] : []),
];

const api = (method, path, body) => apiRequest(apiUrl, apiKey, method, path, body);

// ---------------------------------------------------------------------------------------------- setup

/** Starts an api (`env` on top of the bench's) and makes it the one the phases use. */
async function startApi(env = {}, name = 'api') {
  const port = await freePort();
  const metricsPort = await freePort(); // the api serves /metrics on METRICS_PORT, never on PORT
  const handle = spawnNode(
    name,
    'dist/main.js',
    benchEnv({ PORT: String(port), METRICS_PORT: String(metricsPort), WORKER_ENABLED: 'false', ...env }),
    childNodeFlags('api'),
  );
  sampler.track('api', handle);
  apiUrl = `http://127.0.0.1:${port}`;
  apiMetricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  await waitForHttp(handle, `${apiUrl}/healthz`);
  apiProcess = handle;
}

/** One workspace (through the CLI), 50 calculators (SQL: the CLI makes one per process), 20 webhooks (API). */
async function prepareDataset() {
  const { workspace, apiKey: key, calculators } = await createWorkspace(db, 'bench', benchEnv({}), CALCULATORS);
  apiKey = key;
  const hot = calculators.slice(0, HOT_CALCULATORS);
  const cold = calculators.slice(HOT_CALCULATORS);
  let next = 0;
  const webhooks = [];
  for (let i = 0; i < WEBHOOKS; i += 1) {
    const hotOne = i < HOT_CALCULATORS * FANOUT ? [hot[Math.floor(i / FANOUT)]] : [];
    const bound = [...hotOne];
    while (bound.length < FANOUT) bound.push(cold[next++]);
    const { data } = await api('POST', '/api/v1/webhooks', {
      url: `${receiver.url}/hook/${i}`,
      name: `bench ${i}`,
      calculators: bound,
    });
    webhooks.push(data.id);
  }
  await db.query('ANALYZE');
  return { workspaceId: workspace.id, calculators, hot, spare: cold.slice(next, next + FANOUT), webhooks };
}

/**
 * Removes webhooks a POST/DELETE run left behind (a POST answered after autocannon stopped). Requests
 * autocannon abandoned may still be running in the api, so wait first, and a 404 means one did the job.
 */
async function restoreWebhooks(dataset) {
  await sleep(1000);
  const { data } = await api('GET', '/api/v1/webhooks');
  const keep = new Set(dataset.webhooks);
  const strays = data.filter((w) => !keep.has(w.id));
  for (const w of strays) {
    await api('DELETE', `/api/v1/webhooks/${w.id}`).catch((error) => {
      if (!/: 404 /.test(error.message)) throw error;
    });
  }
  return strays.length;
}

// ---------------------------------------------------------------------------------------------- ceilings

/**
 * The bare NestJS app (bench/ceiling-nest.mjs): a constant JSON body, and each measured endpoint's own work
 * (the same Redis call, the same SQL) with nothing of the service around it.
 */
async function startNestCeiling(workspaceId) {
  const port = await freePort();
  const handle = spawnNode(
    'ceiling-nest',
    'bench/ceiling-nest.mjs',
    {
      NODE_ENV: 'production',
      PORT: String(port),
      DATABASE_URL: `${PG_URL}/${dbName}`,
      REDIS_URL,
      QUEUE_PREFIX: ceilingPrefix,
      WORKSPACE_ID: workspaceId,
      POOL_SIZE: process.env.DATABASE_POOL_SIZE ?? String(SERVICE_DEFAULT_POOL_SIZE),
      ...(settings.nodeOptions ? { NODE_OPTIONS: settings.nodeOptions } : {}),
    },
    childNodeFlags('ceiling'),
  );
  const url = `http://127.0.0.1:${port}/api/v1`;
  await waitForHttp(handle, `${url}/constant`);
  return { handle, url };
}

async function measureNestCeiling(ceiling) {
  const result = await measure(
    { url: `${ceiling.url}/constant` },
    settings,
    new CpuProbe(async () => ({ api: [ceiling.handle.pid] })),
  );
  return { label: 'bare NestJS + Express', ...result };
}

async function measureBullmqCeiling() {
  const handle = spawnNode(
    'ceiling-bullmq',
    'bench/ceiling-bullmq.mjs',
    {
      REDIS_URL,
      QUEUE_PREFIX: ceilingPrefix,
      JOBS: String(settings.deliveries),
      CONCURRENCY: String(settings.workerConcurrency ?? SERVICE_DEFAULT_CONCURRENCY),
      REDIS_PID: String(redisPid ?? ''),
    },
    [],
    { expectExit: true },
  );
  const { code } = await handle.exited;
  if (code !== 0) throw new Error(`BullMQ ceiling failed:\n${handle.output()}`);
  return JSON.parse(handle.output().trim().split('\n').at(-1));
}

// ---------------------------------------------------------------------------------------------- HTTP API

function httpCases(dataset) {
  const headers = { 'x-ac-api-key': apiKey };
  const jsonHeaders = { ...headers, 'content-type': 'application/json' };
  return [
    {
      key: 'me',
      label: 'GET /me',
      options: { url: `${apiUrl}/api/v1/me`, headers },
      ceiling: { path: '/me', label: "bare NestJS + the same Redis call (the rate limiter's one script call)" },
    },
    {
      key: 'webhooks-list',
      label: 'GET /webhooks',
      options: { url: `${apiUrl}/api/v1/webhooks`, headers },
      ceiling: { path: '/webhooks', label: 'bare NestJS + pg, the same SQL (20 webhooks)' },
    },
    {
      key: 'calculators',
      label: 'GET /calculators?limit=50',
      options: { url: `${apiUrl}/api/v1/calculators?limit=50`, headers },
      ceiling: { path: '/calculators', label: 'bare NestJS + pg, the same SQL (50 calculators)' },
    },
    {
      key: 'webhook-get',
      label: 'GET /webhooks/{id}',
      options: { url: `${apiUrl}/api/v1/webhooks/${dataset.webhooks[0]}`, headers },
    },
    {
      key: 'webhook-create',
      label: 'POST /webhooks + DELETE it (req/s of both)',
      restore: true,
      options: {
        url: apiUrl,
        requests: [
          {
            method: 'POST',
            path: '/api/v1/webhooks',
            headers: jsonHeaders,
            body: JSON.stringify({
              url: `${receiver.url}/hook/extra`,
              name: 'bench extra',
              calculators: dataset.spare,
            }),
            onResponse: (status, body, context) => {
              if (status === 201 || status === 200) context.webhookId = JSON.parse(body).data.id;
            },
          },
          {
            method: 'DELETE',
            headers,
            // No id (the POST failed): start the sequence again with a POST.
            setupRequest: (req, context) =>
              context.webhookId ? { ...req, path: `/api/v1/webhooks/${context.webhookId}` } : null,
          },
        ],
      },
    },
    submissionsCase('submissions', `POST submissions (${FANOUT} deliveries each)`, dataset.hot),
    // The same load on one calculator: shows whether submissions queue on that calculator's counter.
    submissionsCase(
      'submissions-one',
      `POST submissions, all to one calculator (${FANOUT} deliveries each)`,
      dataset.hot.slice(0, 1),
    ),
  ];
}

/** POST submissions round-robin over `calculators` (each bound to FANOUT webhooks). */
function submissionsCase(key, label, calculators) {
  let submission = 0;
  return {
    key,
    label,
    options: {
      url: apiUrl,
      requests: [
        {
          method: 'POST',
          headers: { 'x-ac-api-key': apiKey, 'content-type': 'application/json' },
          body: JSON.stringify(SUBMISSION_BODY),
          setupRequest: (req) => ({
            ...req,
            path: `/api/v1/calculators/${calculators[submission++ % calculators.length]}/submissions`,
          }),
        },
      ],
    },
  };
}

/**
 * Statistics as a running service has them. A new database's tables look empty to the planner, so
 * the plans Postgres caches on each connection in the first seconds (the foreign-key checks of every
 * insert among them) scan whole tables, and go on doing so as the tables grow, until autovacuum
 * analyzes them (within autovacuum_naptime, a minute by default). A 10-second phase would measure that
 * minute or not, by chance, so each phase runs after its warm-up and an ANALYZE.
 */
async function analyze() {
  await db.query('ANALYZE');
}

/**
 * Waits until no backend of the bench database is active and at least `minMs` have passed, so one
 * phase's tail (requests autocannon abandoned, autovacuum of its rows aside) does not bleed into the next.
 */
async function settle(minMs = 1000, maxMs = 15_000) {
  const started = performance.now();
  for (;;) {
    const { rows } = await db.query(
      `SELECT count(*)::int AS active FROM pg_stat_activity
       WHERE datname = $1 AND state = 'active' AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
      [dbName],
    );
    const waited = performance.now() - started;
    if ((rows[0].active === 0 && waited >= minMs) || waited >= maxMs) return;
    await sleep(100);
  }
}

/**
 * The same api under three heap settings, one at a time beside the main api (which sits idle): none (V8
 * sizes the heap from the host), the old space capped alone, and the image's NODE_OPTIONS. Shows what a
 * heap cap costs per request when V8 derives the young generation from it (Node 24: a few MB).
 */
const HEAP_SETTINGS = [
  { label: 'none', nodeOptions: '' },
  { label: 'old space capped only', nodeOptions: '--max-old-space-size=128' },
  { label: "the image's", nodeOptions: IMAGE_NODE_OPTIONS },
];

async function heapFlags(dataset) {
  const headers = { 'x-ac-api-key': apiKey };
  const rows = [];
  for (const [i, setting] of HEAP_SETTINGS.entries()) {
    const port = await freePort();
    const env = benchEnv({ PORT: String(port), WORKER_ENABLED: 'false', NODE_OPTIONS: setting.nodeOptions });
    const handle = spawnNode(`api-heap-${i}`, 'dist/main.js', env);
    const url = `http://127.0.0.1:${port}`;
    await waitForHttp(handle, `${url}/healthz`);
    const row = { ...setting };
    for (const [key, path] of [
      ['me', '/api/v1/me'],
      ['webhook-get', `/api/v1/webhooks/${dataset.webhooks[0]}`],
    ]) {
      const cpu = new CpuProbe(async () => ({ api: [handle.pid] }));
      const { requestsPerSec, cpuMsPerRequest, latencyMs } = await measure(
        { url: `${url}${path}`, headers },
        settings,
        cpu,
      );
      row[key] = { requestsPerSec, apiCpuMsPerRequest: cpuMsPerRequest.api, p99Ms: latencyMs.p99 };
    }
    row.peakRssMb = await stopProcess(handle);
    log(`heap flags "${setting.nodeOptions}": GET /me ${row.me.apiCpuMsPerRequest} api ms/req`);
    rows.push(row);
  }
  return rows;
}

const LOG_COST_ROUNDS = 2;

/**
 * What the request's log line costs: GET /me on this api (LOG_LEVEL=info, the default) and on a second
 * api at LOG_LEVEL=silent on the same data, alternated LOG_COST_ROUNDS times so both see the same machine.
 */
async function logCost() {
  const port = await freePort();
  const env = benchEnv({ PORT: String(port), WORKER_ENABLED: 'false', LOG_LEVEL: 'silent' });
  const silent = spawnNode('api-silent', 'dist/main.js', env, childNodeFlags('api-silent'));
  const silentUrl = `http://127.0.0.1:${port}`;
  await waitForHttp(silent, `${silentUrl}/healthz`);
  const headers = { 'x-ac-api-key': apiKey };
  const me = (url) => ({ url: `${url}/api/v1/me`, headers });
  // The new api runs as long as the warmed one ran in its GET /me phase before it is measured (JIT, pools).
  await measure(me(silentUrl), { ...settings, warmupSec: 0 });
  const rounds = [];
  const sides = [
    ['info', apiUrl, apiProcess.pid],
    ['silent', silentUrl, silent.pid],
  ];
  for (let i = 0; i < LOG_COST_ROUNDS; i++) {
    const round = {};
    // Each round in the other order, so a machine getting busier or quieter favours neither.
    for (const [level, url, pid] of i % 2 === 0 ? sides : [...sides].reverse()) {
      await settle();
      const { requestsPerSec, cpuMsPerRequest, latencyMs } = await measure(
        me(url),
        settings,
        new CpuProbe(async () => ({ api: [pid] })),
      );
      round[level] = { requestsPerSec, apiCpuMsPerRequest: cpuMsPerRequest.api, p99Ms: latencyMs.p99 };
    }
    round.ratio = round.info.requestsPerSec / round.silent.requestsPerSec;
    log(`log cost round ${i + 1}: info ${round.info.requestsPerSec} req/s, silent ${round.silent.requestsPerSec}`);
    rounds.push(round);
  }
  await stopProcess(silent);
  return { rounds };
}

/**
 * Cancels the deliveries the HTTP runs (or the last phase) left pending, empties the wake queue and forgets
 * the hosts' admission state (a receiver port used again starts from the defaults), so delivery phases
 * start clean. Called with no worker running.
 */
async function clearBacklog() {
  const { rowCount } = await db.query(
    `UPDATE deliveries SET status = 'cancelled', next_attempt_at = NULL, completed_at = now(), updated_at = now()
     WHERE status = 'pending'`,
  );
  // Queue name: DELIVERY_QUEUE in src/delivery/host-wakes.ts; the host keys: HostStates and HostWakes.
  const queue = new Queue('deliveries', { connection: { url: REDIS_URL }, prefix: queuePrefix });
  await queue.obliterate({ force: true });
  await queue.close();
  await deleteRedisKeys([`${queuePrefix}:host`]);
  const redis = new Redis(REDIS_URL);
  await redis.del(`${queuePrefix}:hosts`, `${queuePrefix}:rewake`);
  redis.disconnect();
  return rowCount;
}

// ---------------------------------------------------------------------------------------------- delivery

const countPending = async () =>
  Number((await db.query(`SELECT count(*) AS n FROM deliveries WHERE status = 'pending'`)).rows[0].n);

/** Creates `count` submissions to the hot calculators through the API, CREATE_CONCURRENCY at a time. */
async function createSubmissions(dataset, count) {
  await postSubmissions(apiUrl, apiKey, {
    count,
    concurrency: CREATE_CONCURRENCY,
    calculatorOf: (i) => dataset.hot[i % dataset.hot.length],
    body: SUBMISSION_BODY,
  });
}

/** WORKER_CONCURRENCY of each worker: BENCH_WORKER_CONCURRENCY, or the service's default. */
async function concurrencyPerWorker() {
  return settings.workerConcurrency ?? SERVICE_DEFAULT_CONCURRENCY;
}

async function spawnWorker(n, concurrency, extraEnv = {}) {
  const port = await freePort();
  const env = benchEnv({ METRICS_PORT: String(port), WORKER_CONCURRENCY: String(concurrency), ...extraEnv });
  const handle = spawnNode(`worker-${n}`, 'dist/worker.js', env, childNodeFlags('worker'));
  handle.metricsUrl = `http://127.0.0.1:${port}/metrics`;
  sampler.track('worker', handle);
  return handle;
}

const MEMORY_METRICS = {
  rssMb: 'process_resident_memory_bytes',
  heapTotalMb: 'nodejs_heap_size_total_bytes',
  heapUsedMb: 'nodejs_heap_size_used_bytes',
  externalMb: 'nodejs_external_memory_bytes',
};

/** RSS against V8 heap and external memory, from the process's own /metrics (null if unreachable). */
async function memoryBreakdown(metricsUrl) {
  try {
    const response = await request(metricsUrl);
    const text = await response.body.text();
    return Object.fromEntries(
      Object.entries(MEMORY_METRICS).map(([key, metric]) => {
        const match = new RegExp(`^${metric}(?:\\{[^}]*\\})? (\\S+)`, 'm').exec(text);
        return [key, match ? Math.round(Number(match[1]) / 1024 / 102.4) / 10 : null];
      }),
    );
  } catch {
    return null;
  }
}

/** Waits until the receiver has `expected` distinct deliveries (calling `onFirst` at the first); fails if it stalls for 30 s. */
async function waitForReceipts(expected, workers, onFirst) {
  let seen = -1;
  let since = performance.now();
  let first = true;
  while (receiver.unique < expected) {
    if (first && receiver.unique > 0) {
      first = false;
      await onFirst();
    }
    for (const w of workers) {
      if (w.child.exitCode !== null) throw new Error(`${w.name} exited during the run:\n${w.output()}`);
    }
    if (receiver.unique !== seen) {
      seen = receiver.unique;
      since = performance.now();
    } else if (performance.now() - since > 30_000) {
      throw new Error(`delivery stalled at ${seen} of ${expected}:\n${workers.map((w) => w.output()).join('\n')}`);
    }
    await sleep(20);
  }
}

/** Deliveries/s of `workerCount` worker processes (`env` on top of the bench's) draining `settings.deliveries` deliveries. */
async function deliveryThroughput(dataset, workerCount, { env = {}, key = `delivery-${workerCount}` } = {}) {
  const submissions = Math.ceil(settings.deliveries / FANOUT);
  const phaseStart = new Date();
  log(`creating ${submissions} submissions (${submissions * FANOUT} deliveries), no worker running`);
  await createSubmissions(dataset, submissions);
  const expected = await countPending();
  if (expected !== submissions * FANOUT) throw new Error(`expected ${submissions * FANOUT} pending, found ${expected}`);
  await analyze();
  receiver.reset();
  results.machine.busyBefore[key] = await machineBusy();
  const concurrency = await concurrencyPerWorker(workerCount);
  log(`starting ${workerCount} worker process(es), concurrency ${concurrency} each`);
  const workers = await Promise.all(
    Array.from({ length: workerCount }, (_, i) => spawnWorker(i + 1, concurrency, env)),
  );
  // From the first receipt on, so the workers' start-up is not counted.
  const cpu = new CpuProbe(async () => ({
    worker: workers.map((w) => w.pid),
    postgres: await postgresBackends(db, dbName),
    redis: redisPid ? [redisPid] : [],
  }));
  let cpuBefore;
  await waitForReceipts(expected, workers, async () => (cpuBefore = await cpu.snapshot()));
  while ((await countPending()) > 0) await sleep(50);
  const doneAt = performance.now();
  results.memory.breakdown[key] = {
    workers: await Promise.all(workers.map((w) => memoryBreakdown(w.metricsUrl))),
  };
  const cpuUsed = cpu.since(cpuBefore, await cpu.snapshot());
  const { rows } = await db.query(
    `SELECT status, count(*)::int AS n FROM deliveries WHERE created_at >= $1 GROUP BY status`,
    [phaseStart],
  );
  const seconds = (doneAt - receiver.firstAt) / 1000;
  return {
    workers,
    result: {
      workerProcesses: workerCount,
      concurrencyPerWorker: concurrency,
      deliveries: expected,
      seconds,
      perSec: expected / seconds,
      receiverWindowPerSec: expected / ((receiver.lastAt - receiver.firstAt) / 1000),
      duplicates: receiver.duplicates,
      statusCounts: Object.fromEntries(rows.map((r) => [r.status, r.n])),
      cpuMsPerDelivery: Object.fromEntries(Object.entries(cpuUsed).map(([role, ms]) => [role, ms / expected])),
    },
  };
}

function percentiles(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] : null);
  return { p50: at(0.5), p95: at(0.95), p99: at(0.99), max: sorted.at(-1) ?? null };
}

/** Offers `latencyRate` submissions/s on a fixed schedule (not waiting for answers) and times each receipt. */
async function submissionLatency(dataset, workers) {
  const total = settings.latencyRate * settings.latencyDurationSec;
  const sentAt = new Array(total);
  const receipts = [];
  const responses = [];
  let failed = 0;
  const failures = {};
  const fail = (reason) => {
    failed += 1;
    failures[reason] = (failures[reason] ?? 0) + 1;
  };
  receiver.reset();
  receiver.onPayload = (payload, at) => {
    const seq = payload?.data?.data?.benchSeq;
    if (Number.isInteger(seq) && sentAt[seq] !== undefined) receipts.push(at - sentAt[seq]);
  };
  const pool = new Pool(apiUrl, { connections: 64 });
  const inflight = [];
  const send = (seq) => {
    const started = performance.now();
    sentAt[seq] = started;
    const body = { ...SUBMISSION_BODY, data: { ...SUBMISSION_BODY.data, benchSeq: seq } };
    inflight.push(
      pool
        .request({
          method: 'POST',
          path: `/api/v1/calculators/${dataset.hot[seq % dataset.hot.length]}/submissions`,
          headers: { 'x-ac-api-key': apiKey, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
        .then(async (response) => {
          await response.body.dump();
          responses.push(performance.now() - started);
          if (response.statusCode !== 200) fail(String(response.statusCode));
        })
        .catch((error) => fail(error.code ?? error.message)),
    );
  };
  // CPU of each process from the first submission to the last receipt, and the machine's (both cores).
  const cpu = new CpuProbe(async () => ({
    api: [apiProcess.pid],
    worker: workers.map((w) => w.pid),
    postgres: await postgresBackends(db, dbName),
    redis: redisPid ? [redisPid] : [],
    bench: [process.pid],
  }));
  const cpuBefore = await cpu.snapshot();
  const machineBefore = machineCpu();
  const t0 = performance.now();
  let sent = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - t0) * settings.latencyRate) / 1000) + 1);
    while (sent < due) send(sent++);
    await sleep(1);
  }
  const offerSeconds = (performance.now() - t0) / 1000;
  await Promise.all(inflight);
  const expected = (total - failed) * FANOUT;
  const deadline = performance.now() + 60_000;
  while (receipts.length < expected && performance.now() < deadline) await sleep(20);
  const machineBusyShare = busyBetween(machineBefore, machineCpu());
  const cpuUsed = cpu.since(cpuBefore, await cpu.snapshot());
  receiver.onPayload = null;
  await pool.close();
  return {
    submissions: total,
    offerSeconds,
    offeredRate: total / offerSeconds,
    failedSubmissions: failed,
    failures,
    expected,
    received: receipts.length,
    duplicates: receiver.duplicates,
    receiptMs: percentiles(receipts),
    responses: responses.length,
    responseMs: percentiles(responses),
    machineBusy: machineBusyShare,
    cpuMsPerSubmission: Object.fromEntries(Object.entries(cpuUsed).map(([role, ms]) => [role, ms / total])),
  };
}

/** A second's worth of submissions, delivered, then ANALYZE (see analyze()); then the latency run. */
async function warmLatency(dataset, workers) {
  await createSubmissions(dataset, settings.latencyRate);
  while ((await countPending()) > 0) await sleep(50);
  await analyze();
  log(`latency: ${settings.latencyRate} submissions/s for ${settings.latencyDurationSec} s, one worker`);
  return submissionLatency(dataset, workers);
}

/**
 * The cost of tracing: rounds of the delivery-1 and latency runs with an api and a worker of their own,
 * once with tracing off and once on (exporting to a local OTLP sink), in turns, so that a drift of the
 * machine's speed falls on both alike. The main api idles meanwhile.
 */
async function tracingCost(dataset) {
  const sink = await new OtlpSink().listen();
  const mainApi = { apiUrl, apiMetricsUrl, apiProcess };
  const measured = [];
  try {
    for (let round = 1; round <= settings.tracingRounds; round++) {
      for (const mode of ['off', 'on', ...(settings.tracingSampleRatio ? ['sampled'] : [])]) {
        const env = {
          off: {},
          on: { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url },
          sampled: {
            OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
            OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
            OTEL_TRACES_SAMPLER_ARG: settings.tracingSampleRatio,
          },
        }[mode];
        log(`tracing ${mode}, round ${round} of ${settings.tracingRounds}`);
        await startApi(env, `api-tracing-${mode}`);
        const bytesBefore = sink.bytes;
        const throughput = await deliveryThroughput(dataset, 1, { env, key: `tracing-${mode}-${round}` });
        const latency = await warmLatency(dataset, throughput.workers);
        for (const w of throughput.workers) await stopProcess(w);
        await stopProcess(apiProcess);
        measured.push({
          mode,
          round,
          delivery: throughput.result,
          latency,
          exportedKb: (sink.bytes - bytesBefore) / 1024,
        });
      }
    }
  } finally {
    ({ apiUrl, apiMetricsUrl, apiProcess } = mainApi);
    await sink.close();
  }
  return { rounds: settings.tracingRounds, sampleRatio: settings.tracingSampleRatio, runs: measured };
}

// ---------------------------------------------------------------------------------------------- run

let results; // module-level, so a failed run can still write what it measured

async function waitForQuiet() {
  const deadline = Date.now() + settings.waitQuietSec * 1000;
  for (;;) {
    const busy = await machineBusy(5000);
    if (busy < 0.25) return;
    if (Date.now() > deadline) {
      log(`machine still ${(busy * 100).toFixed(0)}% busy after ${settings.waitQuietSec} s; measuring anyway`);
      return;
    }
    log(`machine ${(busy * 100).toFixed(0)}% busy; waiting for it to be quiet`);
  }
}

async function main() {
  execFileSync(process.execPath, ['scripts/ensure-build.mjs'], { stdio: 'inherit' });
  if (settings.waitQuietSec > 0) await waitForQuiet();
  results = {
    startedAt: new Date().toISOString(),
    command: commandLine(
      'npm run bench',
      (k) => k.startsWith('BENCH_') || k === 'REDIS_URL' || k === 'DATABASE_POOL_SIZE',
    ),
    code: codeInfo(),
    machine: {
      ...machineInfo(),
      /** Share of the machine's CPU busy in the second before each phase, while the bench itself is idle. */
      busyBefore: {},
    },
    settings: { ...settings, phases: only ? [...only] : 'all' },
    phaseKeys: PHASE_KEYS,
    ceilings: {},
    http: {},
    delivery: {},
    memory: { breakdown: {} },
    engine: {},
  };
  cleanups.push(() => deleteRedisKeys([queuePrefix, ceilingPrefix]));
  await createDatabase(dbName, cleanups, log);
  db = new pg.Client({ connectionString: `${PG_URL}/${dbName}` });
  await receiver.listen();
  cleanups.push(() => receiver.close());

  log(`starting the api (database ${dbName}, queue prefix ${queuePrefix})`);
  await startApi();
  await db.connect();
  cleanups.push(() => db.end());
  if (settings.unpartitioned) {
    await unpartition(db);
    const [{ n }] = (
      await db.query(`SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'deliveries'::regclass`)
    ).rows;
    log(`deliveries and delivery_attempts rebuilt unpartitioned (${n} partitions)`);
  }
  const [{ server_version: postgres }] = (await db.query('SHOW server_version')).rows;
  const redis = new Redis(REDIS_URL);
  const redisInfo = await redis.info('server');
  const redisVersion = /redis_version:(\S+)/.exec(redisInfo)?.[1];
  const pid = Number(/process_id:(\d+)/.exec(redisInfo)?.[1]);
  if (pid && procCpuMs(pid) !== null) redisPid = pid;
  redis.disconnect();
  Object.assign(results.machine, { postgres, redis: redisVersion });
  const dataset = await prepareDataset();
  log(`data set ready: ${dataset.calculators.length} calculators, ${dataset.webhooks.length} webhooks`);
  results.memory.breakdown.setup = { api: await memoryBreakdown(apiMetricsUrl) };

  const workCeilings = httpCases(dataset).some((c) => c.ceiling && runs(c.key));
  const ceiling = runs('ceiling-nest') || workCeilings ? await startNestCeiling(dataset.workspaceId) : null;
  sampler.phase = 'ceilings';
  if (runs('ceiling-nest')) {
    log('ceiling: bare NestJS');
    results.machine.busyBefore['ceiling-nest'] = await machineBusy();
    results.ceilings.nest = await measureNestCeiling(ceiling);
  }
  if (runs('ceiling-bullmq')) {
    log('ceiling: bare BullMQ');
    results.machine.busyBefore['ceiling-bullmq'] = await machineBusy();
    results.ceilings.bullmq = await measureBullmqCeiling();
  }

  results.ceilings.work = {};
  for (const c of httpCases(dataset)) {
    if (!runs(c.key)) continue;
    sampler.phase = c.key;
    const cpu = (pid) =>
      new CpuProbe(async () => ({
        api: [pid],
        postgres: await postgresBackends(db, dbName),
        redis: redisPid ? [redisPid] : [],
      }));
    // The endpoint's own work in the bare app right before the endpoint, so both see the same machine.
    if (c.ceiling) {
      await settle();
      log(`ceiling: ${c.ceiling.label}`);
      await analyze();
      const options = { url: `${ceiling.url}${c.ceiling.path}` };
      results.ceilings.work[c.key] = {
        label: c.ceiling.label,
        ...(await measure(options, settings, cpu(ceiling.handle.pid))),
      };
    }
    await settle();
    log(c.label);
    results.machine.busyBefore[c.key] = await machineBusy();
    const opts = { ...settings, warmupSec: 0 };
    if (settings.warmupSec > 0) await measure(c.options, { ...opts, durationSec: settings.warmupSec });
    if (c.restore) await restoreWebhooks(dataset);
    await analyze();
    results.http[c.key] = { label: c.label, ...(await measure(c.options, opts, cpu(apiProcess.pid))) };
    if (c.restore) results.http[c.key].strayWebhooksRemoved = await restoreWebhooks(dataset);
    results.memory.breakdown[c.key] = { api: await memoryBreakdown(apiMetricsUrl) };
  }
  if (ceiling) {
    const peakRssMb = await stopProcess(ceiling.handle);
    if (results.ceilings.nest) results.ceilings.nest.peakRssMb = peakRssMb;
  }

  if (runs('log-cost')) {
    sampler.phase = 'log-cost';
    log('log line cost: GET /me at LOG_LEVEL=info (this api) against silent (a second one)');
    results.machine.busyBefore['log-cost'] = await machineBusy();
    results.logCost = await logCost();
  }

  if (runs('heap-flags')) {
    sampler.phase = 'heap-flags';
    log('heap flags: the api under three NODE_OPTIONS settings');
    results.machine.busyBefore['heap-flags'] = await machineBusy();
    results.heapFlags = await heapFlags(dataset);
  }

  if (runs('delivery-1') || runs('latency') || runs('delivery-2')) {
    sampler.phase = 'clear-backlog';
    await sleep(2000); // requests autocannon abandoned at its end may still be running in the api
    log(`cleared ${await clearBacklog()} pending deliveries left by the HTTP runs`);
    let workers = [];
    const workerPeaks = [];
    const stopWorkers = async () => {
      for (const w of workers) workerPeaks.push(await stopProcess(w));
      workers = [];
    };
    if (runs('delivery-1') || runs('latency')) {
      sampler.phase = 'delivery-1';
      if (runs('delivery-1')) {
        const run = await deliveryThroughput(dataset, 1);
        workers = run.workers;
        results.delivery.oneWorker = run.result;
      } else {
        workers = [await spawnWorker(1, await concurrencyPerWorker(1))];
        await sleep(3000);
      }
      if (runs('latency')) {
        sampler.phase = 'latency';
        results.machine.busyBefore.latency = await machineBusy();
        results.delivery.latency = await warmLatency(dataset, workers);
        results.memory.breakdown.latency = {
          api: await memoryBreakdown(apiMetricsUrl),
          workers: await Promise.all(workers.map((w) => memoryBreakdown(w.metricsUrl))),
        };
      }
      await stopWorkers();
    }
    if (runs('delivery-2')) {
      sampler.phase = 'delivery-2';
      const run = await deliveryThroughput(dataset, 2);
      workers = run.workers;
      results.delivery.twoWorkers = run.result;
      await stopWorkers();
    }
    const peaks = workerPeaks.filter((mb) => mb !== null);
    results.memory.workerPeakMb = peaks.length ? Math.max(...peaks) : null;
  }

  if (runs('tracing')) {
    sampler.phase = 'tracing';
    log(`cleared ${await clearBacklog()} pending deliveries before the tracing runs`);
    results.tracing = await tracingCost(dataset);
  }

  await runEnginePhases(
    {
      db,
      apiUrl,
      apiMetricsUrl,
      dbName,
      queuePrefix,
      redisPid,
      log,
      sampler,
      clearBacklog,
      nodeOptions: settings.nodeOptions,
      nodeFlags: childNodeFlags('worker'),
      logLevel: settings.logLevel,
    },
    runs,
    results,
  );

  sampler.phase = 'filters';
  await runFilterPhases(
    {
      db,
      apiUrl,
      dbName,
      redisPid,
      apiPid: () => apiProcess.pid,
      log,
      settings: { connections: settings.connections, warmupSec: settings.warmupSec, durationSec: settings.durationSec },
    },
    runs,
    results,
  );

  sampler.stop();
  results.memory.apiPeakMb = await stopProcess(apiProcess);
  results.memory.sampledByPhase = Object.fromEntries(
    Object.entries(sampler.max).map(([role, entry]) => [role, entry.byPhase]),
  );
  results.machine.loadAfter = os.loadavg()[0];
  results.finishedAt = new Date().toISOString();
  results.targets = evaluateTargets(results);
  return results;
}

function writeResults(results) {
  mkdirSync('bench/results', { recursive: true });
  const json = `${JSON.stringify(results, null, 2)}\n`;
  if (only || settings.profile || settings.unpartitioned) {
    const path = `bench/results/partial-${id}.json`;
    writeFileSync(path, json);
    log(`partial, profiled or unpartitioned run: wrote ${path} (latest.json and BENCHMARKS.md untouched)`);
    if (settings.profile) log(`profiles in ${profileDir}/; summarise with node bench/profile-summary.mjs <file>`);
  } else {
    writeFileSync('bench/results/latest.json', json);
    writeFileSync('BENCHMARKS.md', renderMarkdown(results, loadBaseline()));
    log('wrote bench/results/latest.json and BENCHMARKS.md');
  }
  for (const t of results.targets) {
    const verdict = t.pass === null ? 'n/a ' : t.pass ? 'pass' : 'FAIL';
    const ratio = t.ratio === null ? '' : ` (${(t.ratio * 100).toFixed(1)}% of ceiling)`;
    log(
      `${verdict}  ${t.name}: ${t.value === null || t.value === undefined ? 'n/a' : t.value.toFixed(1)}${ratio}; ${t.target}`,
    );
  }
}

const { cleanup } = setUpCleanup(cleanups, log);

try {
  writeResults(await main());
  await cleanup();
} catch (error) {
  log(`failed: ${error.stack ?? error.message}`);
  if (results) {
    mkdirSync('bench/results', { recursive: true });
    writeFileSync(
      `bench/results/failed-${id}.json`,
      `${JSON.stringify({ error: error.message, ...results }, null, 2)}\n`,
    );
    log(`what was measured before the failure: bench/results/failed-${id}.json`);
  }
  await cleanup();
  process.exitCode = 1;
}
