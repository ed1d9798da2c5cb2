// `npm run soak`: a bounded run (SOAK_SECONDS, default 300) of steady, moderate mixed
// traffic against the built api (worker disabled) and one built worker, on a database and queue prefix of
// its own. Samples VmRSS of both every 5 s, checks every delivery of the run ended succeeded (or cancelled,
// for webhooks deleted during the run), and computes RSS growth over the second half. Writes
// bench/results/soak-latest.json and SOAK.md; always stops its processes, drops its database and its keys.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { Pool } from 'undici';
import { freePort, procMemoryMb, setUpCleanup, spawnNode, stopProcess, waitForHttp } from './lib/processes.mjs';
import { BenchReceiver } from './lib/receiver.mjs';
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
} from './lib/setup.mjs';

const settings = {
  durationSec: envInt('SOAK_SECONDS', 300),
  submissionsPerSec: envInt('SOAK_RATE', 40),
  sampleEverySec: 5,
  smoothingWindowSec: 30,
  growthLimit: 0.1,
};
if (settings.durationSec < 60) throw new Error('SOAK_SECONDS must be at least 60 (two 30 s windows)');

const FANOUT = 3; // webhooks, each bound to every hot calculator: a submission creates 3 deliveries
const HOT_CALCULATORS = 5;
const CALCULATORS = 30;
const SUBMISSION_BODY = { data: { answer: 42, email: 'soak@example.com', total: 123.45 }, finished: true };
const DRAIN_TIMEOUT_MS = 120_000;

const id = Date.now().toString(36);
const dbName = `cw_soak_${id}`;
const queuePrefix = `cwsoak_${id}`;
const log = logger('soak');

const cleanups = [];
const receiver = new BenchReceiver();
let db;
let apiUrl;
let apiKey;
let pool;

function soakEnv(extra) {
  return productEnv(
    { dbName, queuePrefix },
    {
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_MINUTE: '0',
      RATE_LIMIT_PER_IP_PER_MINUTE: '0',
      NODE_OPTIONS: IMAGE_NODE_OPTIONS, // the heap budget the image runs with
      ...extra,
    },
  );
}

// ---------------------------------------------------------------------------------------------- setup

/** One API call through the keep-alive pool; throws on a non-2xx answer. */
async function api(method, path, body) {
  const response = await pool.request({
    method,
    path,
    headers: { 'x-ac-api-key': apiKey, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await response.body.text();
  if (response.statusCode >= 300) {
    let reason = text.slice(0, 100);
    try {
      reason = JSON.parse(text).error?.code ?? reason;
    } catch {
      // not JSON: keep the text
    }
    // No ids in the message, so failures of a kind add up under one key.
    throw new Error(`${response.statusCode} ${reason}`);
  }
  return text ? JSON.parse(text) : null;
}

async function prepareDataset() {
  const { apiKey: key, calculators } = await createWorkspace(db, 'soak', soakEnv({}), CALCULATORS);
  apiKey = key;
  const hot = calculators.slice(0, HOT_CALCULATORS);
  const webhooks = [];
  for (let i = 0; i < FANOUT; i += 1) {
    const { data } = await api('POST', '/api/v1/webhooks', {
      url: `${receiver.url}/hook/${i}`,
      name: `soak ${i}`,
      calculators: hot,
    });
    webhooks.push(data.id);
  }
  await db.query('ANALYZE');
  return { hot, webhooks };
}

// ---------------------------------------------------------------------------------------------- traffic

const counts = { requests: 0, failed: 0, submissions: 0, failures: {}, byKind: {} };
const deletedWebhooks = new Set();

/** Fires one request in the background, counting it (and its failure) by kind. */
function fire(kind, call) {
  counts.byKind[kind] = (counts.byKind[kind] ?? 0) + 1;
  counts.requests += 1;
  return call().catch((error) => {
    counts.failed += 1;
    const reason = `${kind}: ${error.message.slice(0, 120)}`;
    counts.failures[reason] = (counts.failures[reason] ?? 0) + 1;
  });
}

/** Each second: the reads, one delivery-log read per webhook, and a POST + DELETE webhook pair. */
function perSecond(dataset, second) {
  const { webhooks, hot } = dataset;
  const pending = [
    fire('GET /me', () => api('GET', '/api/v1/me')),
    fire('GET /webhooks', () => api('GET', '/api/v1/webhooks')),
    fire('GET /calculators', () => api('GET', '/api/v1/calculators?limit=50')),
    fire('GET /webhooks/{id}', () => api('GET', `/api/v1/webhooks/${webhooks[second % webhooks.length]}`)),
    ...webhooks.map((w) =>
      fire('GET /webhooks/{id}/deliveries', () => api('GET', `/api/v1/webhooks/${w}/deliveries?limit=20`)),
    ),
  ];
  // Bound to a hot calculator, so it takes deliveries while it lives and its pending ones are cancelled.
  pending.push(
    fire('POST /webhooks', async () => {
      const { data } = await api('POST', '/api/v1/webhooks', {
        url: `${receiver.url}/hook/temp`,
        name: `soak temp ${second}`,
        calculators: [hot[second % hot.length]],
      });
      deletedWebhooks.add(data.id);
      await sleep(200);
      await fire('DELETE /webhooks/{id}', () => api('DELETE', `/api/v1/webhooks/${data.id}`));
    }),
  );
  return Promise.all(pending);
}

const countPending = async () =>
  Number((await db.query(`SELECT count(*)::int AS n FROM deliveries WHERE status = 'pending'`)).rows[0].n);

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

async function soak(dataset, apiProcess, workerProcess) {
  const samples = [];
  const inflight = new Set();
  const track = (promise) => {
    inflight.add(promise);
    promise.finally(() => inflight.delete(promise));
  };
  const t0 = performance.now();
  const endMs = settings.durationSec * 1000;
  let sent = 0;
  let second = 0;
  let nextSample = 0;
  let maxInflight = 0;
  while (performance.now() - t0 < endMs) {
    const elapsed = performance.now() - t0;
    // Submissions on a fixed schedule (open loop), to a hot calculator each.
    const due = Math.floor((elapsed * settings.submissionsPerSec) / 1000) + 1;
    while (sent < due) {
      const calculator = dataset.hot[sent % dataset.hot.length];
      sent += 1;
      track(
        fire('POST submissions', async () => {
          await api('POST', `/api/v1/calculators/${calculator}/submissions`, SUBMISSION_BODY);
          counts.submissions += 1;
        }),
      );
    }
    if (elapsed >= second * 1000) track(perSecond(dataset, second++));
    if (elapsed >= nextSample * 1000) {
      nextSample += settings.sampleEverySec;
      for (const [name, handle] of [
        ['api', apiProcess],
        ['worker', workerProcess],
      ]) {
        if (handle.child.exitCode !== null) throw new Error(`${name} exited during the soak:\n${handle.output()}`);
      }
      samples.push({
        t: Math.round(elapsed / 1000),
        apiMb: procMemoryMb(apiProcess.pid, 'VmRSS'),
        workerMb: procMemoryMb(workerProcess.pid, 'VmRSS'),
        pending: await countPending(),
        received: receiver.unique,
        inflightRequests: inflight.size,
      });
      const s = samples.at(-1);
      log(
        `t=${s.t}s api ${s.apiMb.toFixed(1)} MB, worker ${s.workerMb.toFixed(1)} MB, pending ${s.pending}, received ${s.received}, in flight ${s.inflightRequests}`,
      );
    }
    maxInflight = Math.max(maxInflight, inflight.size);
    await sleep(5);
  }
  const trafficSeconds = (performance.now() - t0) / 1000;
  // The final sample, at the end of the traffic.
  samples.push({
    t: Math.round(trafficSeconds),
    apiMb: procMemoryMb(apiProcess.pid, 'VmRSS'),
    workerMb: procMemoryMb(workerProcess.pid, 'VmRSS'),
    pending: await countPending(),
    received: receiver.unique,
    inflightRequests: inflight.size,
  });
  await Promise.all([...inflight]);
  return { samples, trafficSeconds, submissionsOffered: sent, maxInflight };
}

async function drain() {
  const started = performance.now();
  for (;;) {
    const pending = await countPending();
    if (pending === 0) return (performance.now() - started) / 1000;
    if (performance.now() - started > DRAIN_TIMEOUT_MS) {
      throw new Error(`${pending} deliveries still pending ${DRAIN_TIMEOUT_MS / 1000} s after the traffic stopped`);
    }
    await sleep(250);
  }
}

function growth(samples, role) {
  const key = `${role}Mb`;
  const end = samples.at(-1).t;
  const mid = end / 2;
  const half = settings.smoothingWindowSec / 2;
  const middle = samples.filter((s) => s.t >= mid - half && s.t <= mid + half).map((s) => s[key]);
  const last = samples.filter((s) => s.t >= end - settings.smoothingWindowSec).map((s) => s[key]);
  const midMb = median(middle);
  const endMb = median(last);
  const ratio = (endMb - midMb) / midMb;
  return {
    midpointWindow: [mid - half, mid + half],
    midpointSamples: middle.length,
    midpointMedianMb: midMb,
    endWindow: [end - settings.smoothingWindowSec, end],
    endSamples: last.length,
    endMedianMb: endMb,
    growth: ratio,
    pass: ratio < settings.growthLimit,
  };
}

// ---------------------------------------------------------------------------------------------- run

async function main() {
  execFileSync(process.execPath, ['scripts/ensure-build.mjs'], { stdio: 'inherit' });
  const machine = machineInfo();
  const results = {
    startedAt: new Date().toISOString(),
    command: commandLine('npm run soak', (k) => k.startsWith('SOAK_') || k === 'BENCH_PG_URL' || k === 'REDIS_URL'),
    code: codeInfo(),
    machine: { ...machine, ramGb: Math.round(machine.ramGb * 10) / 10 }, // rounded: SOAK.md prints it as is
    settings: { ...settings, fanout: FANOUT },
  };
  cleanups.push(async () => log(`deleted ${await deleteRedisKeys([queuePrefix])} redis keys under ${queuePrefix}:`));
  await createDatabase(dbName, cleanups, log);
  await receiver.listen();
  cleanups.push(() => receiver.close());

  const port = await freePort();
  apiUrl = `http://127.0.0.1:${port}`;
  log(`starting the api (database ${dbName}, queue prefix ${queuePrefix})`);
  const apiHandle = spawnNode('api', 'dist/main.js', soakEnv({ PORT: String(port), WORKER_ENABLED: 'false' }));
  await waitForHttp(apiHandle, `${apiUrl}/healthz`);
  db = new pg.Client({ connectionString: `${PG_URL}/${dbName}` });
  await db.connect();
  cleanups.push(() => db.end());
  pool = new Pool(apiUrl, { connections: 32 });
  cleanups.push(() => pool.close());
  const dataset = await prepareDataset();
  const worker = spawnNode('worker', 'dist/worker.js', soakEnv({ METRICS_PORT: String(await freePort()) }));
  await sleep(3000);
  if (worker.child.exitCode !== null) throw new Error(`worker exited at start:\n${worker.output()}`);
  receiver.reset();

  log(
    `soak: ${settings.durationSec} s, ${settings.submissionsPerSec} submissions/s x ${FANOUT} webhooks, reads and a webhook POST+DELETE every second`,
  );
  const run = await soak(dataset, apiHandle, worker);
  log(`traffic stopped after ${run.trafficSeconds.toFixed(1)} s; draining the delivery backlog`);
  const drainSeconds = await drain();
  log(`drained in ${drainSeconds.toFixed(1)} s`);

  const { rows } = await db.query(
    // The database is the run's own: every delivery in it is one of the run's.
    'SELECT webhook_id, status, count(*)::int AS n FROM deliveries GROUP BY webhook_id, status',
  );
  const statusCounts = {};
  const unexpected = {};
  let deliveries = 0;
  for (const r of rows) {
    deliveries += r.n;
    statusCounts[r.status] = (statusCounts[r.status] ?? 0) + r.n;
    const allowed = deletedWebhooks.has(r.webhook_id) ? ['succeeded', 'cancelled'] : ['succeeded'];
    if (!allowed.includes(r.status)) unexpected[r.status] = (unexpected[r.status] ?? 0) + r.n;
  }
  const expectedStable = counts.submissions * FANOUT;
  const stableDeliveries = rows.filter((r) => !deletedWebhooks.has(r.webhook_id)).reduce((n, r) => n + r.n, 0);

  const pendingSeries = run.samples.map((s) => s.pending);
  const secondHalf = run.samples.filter((s) => s.t >= run.trafficSeconds / 2).map((s) => s.pending);
  // Bounded: the worker is never more than 30 s of deliveries (at the offered rate) behind.
  const backlogLimit = settings.submissionsPerSec * FANOUT * 30;
  const backlog = {
    maxPending: Math.max(...pendingSeries),
    maxPendingSecondHalf: Math.max(...secondHalf),
    pendingAtEnd: pendingSeries.at(-1),
    limit: backlogLimit,
    drainSeconds,
    pass: Math.max(...pendingSeries) <= backlogLimit,
  };

  // What the processes logged at warn and above (the last lines), to explain any failure.
  const logTail = (handle) => handle.output().trim().split('\n').slice(-20);
  results.logs = { api: logTail(apiHandle), worker: logTail(worker) };
  await stopProcess(worker);
  await stopProcess(apiHandle);

  const memory = { api: growth(run.samples, 'api'), worker: growth(run.samples, 'worker') };
  const deliveryCheck = {
    deliveries,
    statusCounts,
    unexpected,
    stableWebhookDeliveries: stableDeliveries,
    expectedStableWebhookDeliveries: expectedStable,
    temporaryWebhooks: deletedWebhooks.size,
    receiverUnique: receiver.unique,
    receiverDuplicates: receiver.duplicates,
    pass: Object.keys(unexpected).length === 0 && stableDeliveries === expectedStable,
  };
  Object.assign(results, {
    finishedAt: new Date().toISOString(),
    trafficSeconds: run.trafficSeconds,
    requests: {
      total: counts.requests,
      failed: counts.failed,
      failures: counts.failures,
      byKind: counts.byKind,
      perSec: counts.requests / run.trafficSeconds,
      maxInflight: run.maxInflight,
    },
    submissions: { offered: run.submissionsOffered, accepted: counts.submissions },
    deliveryCheck,
    backlog,
    samples: run.samples,
    memory,
  });
  results.machine.loadAfter = os.loadavg()[0];
  results.pass = memory.api.pass && memory.worker.pass && deliveryCheck.pass && backlog.pass && counts.failed === 0;
  return results;
}

// ---------------------------------------------------------------------------------------------- report

const pct = (x) => `${(x * 100).toFixed(1)}%`;
const mb = (x) => (x === null ? 'n/a' : x.toFixed(1));
const verdict = (ok) => (ok ? 'PASS' : 'FAIL');

/** Distinct errors in JSON log lines: the first line of the stack (the cause) and the message, with counts. */
function loggedErrors(lines) {
  const seen = new Map();
  for (const line of lines) {
    try {
      const entry = JSON.parse(line);
      if (!entry.stack) continue;
      const text = `${entry.stack.split('\n')[0]} (${entry.msg.replace(/ [0-9a-f-]{36} /, ' ').replace(/\/[a-z0-9]{24}\//g, '/{id}/')})`;
      seen.set(text, (seen.get(text) ?? 0) + 1);
    } catch {
      // not a JSON log line
    }
  }
  return [...seen];
}

function renderMarkdown(r) {
  const m = r.machine;
  const lines = [
    '# Soak test',
    '',
    `Generated by \`npm run soak\` (bench/soak.mjs) on ${r.finishedAt}. Raw data: bench/results/soak-latest.json.`,
    '',
    `**Result: ${verdict(r.pass)}**`,
    '',
    `- api RSS growth over the second half: ${pct(r.memory.api.growth)}, ${verdict(r.memory.api.pass)} (bound ${pct(r.settings.growthLimit)})`,
    `- worker RSS growth over the second half: ${pct(r.memory.worker.growth)}, ${verdict(r.memory.worker.pass)} (bound ${pct(r.settings.growthLimit)})`,
    `- every delivery ended succeeded (or cancelled, for deleted webhooks): ${verdict(r.deliveryCheck.pass)}`,
    `- delivery backlog bounded: ${verdict(r.backlog.pass)}`,
    `- no failed request: ${verdict(r.requests.failed === 0)} (${r.requests.failed} of ${r.requests.total} failed)`,
    '',
    '## Setup',
    '',
    `- Machine: ${m.cpuModel}, ${m.cpus} CPUs, ${m.ramGb} GB RAM, ${m.os}; load ${m.loadBefore.toFixed(2)} before, ${m.loadAfter.toFixed(2)} after`,
    `- Node ${m.node}; code ${r.code.commit}${r.code.dirty ? ' (with uncommitted changes under src/)' : ''}`,
    `- Command: \`${r.command}\``,
    `- Duration: ${r.trafficSeconds.toFixed(1)} s of traffic (SOAK_SECONDS=${r.settings.durationSec}), then the backlog drained in ${r.backlog.drainSeconds.toFixed(1)} s`,
    '- Processes: the built api (dist/main.js, WORKER_ENABLED=false, NODE_ENV=production, LOG_LEVEL=warn, RATE_LIMIT_PER_MINUTE=0, ' +
      'admission at its defaults, NODE_OPTIONS=' +
      IMAGE_NODE_OPTIONS +
      ' as in the image) and one built worker (dist/worker.js), own database and queue prefix, local keep-alive receiver',
    `- Load: ${r.settings.submissionsPerSec} submissions/s (open loop), each fanning out to ${r.settings.fanout} webhooks; every second GET /me, ` +
      `GET /webhooks, GET /calculators?limit=50, GET /webhooks/{id}, GET /webhooks/{id}/deliveries?limit=20 for each of the ${r.settings.fanout} webhooks, ` +
      'and a POST /webhooks (bound to a hot calculator) followed 200 ms later by its DELETE',
    '',
    '## Counts',
    '',
    `- Requests: ${r.requests.total} (${r.requests.perSec.toFixed(1)}/s), failed: ${r.requests.failed}`,
    `- Submissions: ${r.submissions.accepted} accepted of ${r.submissions.offered} offered`,
    `- Deliveries: ${r.deliveryCheck.deliveries} (${Object.entries(r.deliveryCheck.statusCounts)
      .map(([s, n]) => `${s} ${n}`)
      .join(', ')}); ${r.deliveryCheck.stableWebhookDeliveries} to the ${r.settings.fanout} permanent webhooks ` +
      `(expected ${r.deliveryCheck.expectedStableWebhookDeliveries}), the rest to ${r.deliveryCheck.temporaryWebhooks} webhooks deleted during the run`,
    `- Receiver: ${r.deliveryCheck.receiverUnique} distinct deliveries, ${r.deliveryCheck.receiverDuplicates} duplicates`,
    `- Every delivery ended succeeded (or cancelled, for deleted webhooks): ${verdict(r.deliveryCheck.pass)}` +
      (Object.keys(r.deliveryCheck.unexpected).length
        ? ` (unexpected: ${JSON.stringify(r.deliveryCheck.unexpected)})`
        : ''),
    `- Delivery backlog (pending rows, sampled every ${r.settings.sampleEverySec} s): max ${r.backlog.maxPending}, ` +
      `max in the second half ${r.backlog.maxPendingSecondHalf}, at the end ${r.backlog.pendingAtEnd}; bound ${r.backlog.limit} (30 s of deliveries): ${verdict(r.backlog.pass)}`,
  ];
  if (r.requests.failed) {
    lines.push('', 'Failures:', '', ...Object.entries(r.requests.failures).map(([k, n]) => `- ${n} x ${k}`));
    const errors = loggedErrors(r.logs?.api ?? []);
    if (errors.length) {
      lines.push('', 'Errors in the last lines the api logged:', '', ...errors.map(([e, n]) => `- ${n} x ${e}`));
    }
  }
  lines.push(
    '',
    '## RSS over time',
    '',
    'VmRSS from /proc/<pid>/status, sampled every 5 s from the start of the traffic.',
    '',
    '| t (s) | api MB | worker MB | pending |',
    '| ---: | ---: | ---: | ---: |',
    ...r.samples.map((s) => `| ${s.t} | ${mb(s.apiMb)} | ${mb(s.workerMb)} | ${s.pending} |`),
    '',
    '## Growth over the second half',
    '',
    `(median RSS of the samples in the last ${r.settings.smoothingWindowSec} s − median in the ${r.settings.smoothingWindowSec} s around the midpoint) / ` +
      `the midpoint median; PASS under ${pct(r.settings.growthLimit)}.`,
    '',
    '| process | midpoint window (s) | median MB | end window (s) | median MB | growth | verdict |',
    '| --- | --- | ---: | --- | ---: | ---: | --- |',
    ...['api', 'worker'].map((role) => {
      const g = r.memory[role];
      return `| ${role} | ${g.midpointWindow.join('–')} (${g.midpointSamples} samples) | ${mb(g.midpointMedianMb)} | ${g.endWindow.join('–')} (${g.endSamples} samples) | ${mb(g.endMedianMb)} | ${pct(g.growth)} | ${verdict(g.pass)} |`;
    }),
    '',
  );
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------- lifecycle

const { cleanup, interrupted } = setUpCleanup(cleanups, log);

if (process.argv.includes('--render')) {
  // Re-renders SOAK.md from bench/results/soak-latest.json (no run).
  writeFileSync('SOAK.md', renderMarkdown(JSON.parse(readFileSync('bench/results/soak-latest.json', 'utf8'))));
  process.exit(0);
}

try {
  const results = await main();
  mkdirSync('bench/results', { recursive: true });
  writeFileSync('bench/results/soak-latest.json', `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync('SOAK.md', renderMarkdown(results));
  log('wrote bench/results/soak-latest.json and SOAK.md');
  for (const role of ['api', 'worker']) {
    const g = results.memory[role];
    log(
      `${verdict(g.pass)}  ${role} RSS growth over the second half: ${pct(g.growth)} (${mb(g.midpointMedianMb)} -> ${mb(g.endMedianMb)} MB)`,
    );
  }
  log(`${verdict(results.deliveryCheck.pass)}  deliveries: ${JSON.stringify(results.deliveryCheck.statusCounts)}`);
  log(`${verdict(results.backlog.pass)}  backlog: max ${results.backlog.maxPending} pending`);
  log(
    `requests: ${results.requests.total}, failed ${results.requests.failed} ${JSON.stringify(results.requests.failures)}`,
  );
  log(`overall: ${verdict(results.pass)}`);
  if (!results.pass) process.exitCode = 1;
} catch (error) {
  log(`failed: ${error.stack ?? error.message}`);
  process.exitCode = 1;
} finally {
  if (!interrupted()) await cleanup();
}
