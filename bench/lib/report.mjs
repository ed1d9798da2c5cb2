// The benchmark's targets and the BENCHMARKS.md template; both read only the results object of a run.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { engineSection, engineTargets } from './engine-phases.mjs';
import { filterSection, filterTargets } from './filter-phases.mjs';

const fmt = (n, digits = 0) =>
  n === null || n === undefined || Number.isNaN(n)
    ? 'n/a'
    : n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const pct = (ratio) => (ratio === null || ratio === undefined ? 'n/a' : `${(ratio * 100).toFixed(1)}%`);
const ratioOf = (value, ceiling) => (value && ceiling ? value / ceiling : null);

/** Each target: the figure, its ceiling (when the target is a ratio), the limit and pass/fail. */
export function evaluateTargets(results) {
  const nest = results.ceilings.nest?.requestsPerSec ?? null;
  const bullmq = results.ceilings.bullmq?.jobsPerSec ?? null;
  const targets = [];
  // A run that got error answers measured the error path: its figures cannot pass.
  const invalidity = (key) => {
    const r = results.http[key];
    return r && (r.non2xx > 0 || r.errors > 0) ? `${r.non2xx} non-2xx answers, ${r.errors} errors` : null;
  };
  const add = (target, check) => {
    const measured = target.value !== null && target.value !== undefined;
    const pass = target.invalid ? false : measured ? check(target.value) : null;
    targets.push({ ceiling: null, ratio: null, invalid: null, ...target, pass });
  };
  const ratioTarget = (name, value, ceiling, min, invalid = null) => {
    const ratio = ratioOf(value, ceiling);
    add({ name, value, ceiling, ratio, invalid, target: `>= ${pct(min)} of ceiling` }, () =>
      ratio === null ? null : ratio >= min,
    );
  };
  const maxTarget = (name, value, limit, unit, invalid = null) =>
    add({ name, value, invalid, target: `< ${limit} ${unit}` }, (v) => v < limit);

  ratioTarget('GET /me req/s', results.http.me?.requestsPerSec, nest, 0.75, invalidity('me'));
  for (const [key, label] of [
    ['webhooks-list', 'GET /webhooks req/s'],
    ['calculators', 'GET /calculators?limit=50 req/s'],
  ]) {
    ratioTarget(label, results.http[key]?.requestsPerSec, nest, 0.5, invalidity(key));
  }
  // Each beside the physical limit of its own work, in the same run: the same Redis call or SQL in a bare app.
  for (const [key, endpoint, ceiling] of [
    ['me', 'GET /me req/s', 'bare NestJS + the same Redis call'],
    ['webhooks-list', 'GET /webhooks req/s', 'bare NestJS + pg, the same SQL'],
    ['calculators', 'GET /calculators?limit=50 req/s', 'bare NestJS + pg, the same SQL'],
  ]) {
    const work = results.ceilings.work?.[key] ?? null;
    // The CPU each spends per request says what req/s on a shared machine cannot: how far apart the work is.
    const cpu = [results.http[key], work].map((r) => r?.cpuMsPerRequest?.api);
    const costs = cpu.every((ms) => typeof ms === 'number')
      ? `; api CPU ${fmt(cpu[0], 3)} ms/req, bare ${fmt(cpu[1], 3)}`
      : '';
    ratioTarget(
      `${endpoint} (ceiling: ${ceiling}${costs})`,
      results.http[key]?.requestsPerSec,
      work?.requestsPerSec ?? null,
      0.8,
      invalidity(key),
    );
  }
  const meanOf = (level, field = 'requestsPerSec') =>
    results.logCost
      ? results.logCost.rounds.reduce((sum, r) => sum + r[level][field], 0) / results.logCost.rounds.length
      : null;
  const lineCpu = results.logCost
    ? `; api CPU ${fmt(meanOf('info', 'apiCpuMsPerRequest'), 3)} ms/req at info, ${fmt(meanOf('silent', 'apiCpuMsPerRequest'), 3)} at silent`
    : '';
  ratioTarget(
    `GET /me req/s at LOG_LEVEL=info (ceiling: the same api at silent${lineCpu})`,
    meanOf('info'),
    meanOf('silent'),
    0.9,
  );
  for (const key of ['me', 'webhooks-list', 'calculators', 'webhook-get']) {
    const r = results.http[key];
    if (r) maxTarget(`${r.label} p99 latency`, r.latencyMs.p99, 50, 'ms', invalidity(key));
  }
  ratioTarget(
    'POST submissions req/s (3 deliveries each)',
    results.http.submissions?.requestsPerSec,
    nest,
    0.3,
    invalidity('submissions'),
  );
  // The ceiling here is the same load spread over the six hot calculators.
  ratioTarget(
    'POST submissions to one calculator req/s (ceiling: to six)',
    results.http['submissions-one']?.requestsPerSec,
    results.http.submissions?.requestsPerSec,
    0.8,
    invalidity('submissions-one') ?? invalidity('submissions'),
  );
  const one = results.delivery.oneWorker?.perSec ?? null;
  const two = results.delivery.twoWorkers?.perSec ?? null;
  ratioTarget('deliveries/s, one worker process', one, bullmq, 0.25);
  add(
    {
      name: 'deliveries/s, two worker processes',
      value: two,
      ceiling: bullmq,
      ratio: ratioOf(two, bullmq),
      target: `> one worker (${fmt(one)}/s)`,
    },
    (v) => (one === null ? null : v > one),
  );
  const latency = results.delivery.latency;
  maxTarget(
    `submission-to-receipt p99 at ${results.settings.latencyRate} submissions/s`,
    latency?.receiptMs.p99,
    100,
    'ms',
    latency && latency.received < latency.expected
      ? `${latency.expected - latency.received} deliveries not received`
      : null,
  );
  maxTarget('api peak RSS', results.memory.apiPeakMb, 250, 'MB');
  maxTarget('worker peak RSS', results.memory.workerPeakMb, 200, 'MB');
  targets.push(...engineTargets(results));
  targets.push(...filterTargets(results));
  return targets;
}

const verdict = (pass) => (pass === null ? 'not measured' : pass ? 'pass' : '**FAIL**');

const cpuOf = (r, role) => r?.cpuMsPerRequest?.[role] ?? r?.cpuMsPerDelivery?.[role] ?? null;

function httpTable(results) {
  const nest = results.ceilings.nest;
  const rows = [
    '| endpoint | req/s | ratio to bare NestJS | ratio to its own work | p50 ms | p90 ms | p99 ms | max ms | non-2xx | errors | api CPU ms/req | Postgres CPU ms/req | CPU-cost ratio | CPU-cost ratio to its own work |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const work = results.ceilings.work ?? {};
  const row = (label, r, ratio, own = { rate: '-', cost: '-' }) =>
    rows.push(
      `| ${label} | ${fmt(r.requestsPerSec)} | ${ratio} | ${own.rate} | ${r.latencyMs.p50} | ${r.latencyMs.p90} | ${r.latencyMs.p99} | ${r.latencyMs.max} | ${r.non2xx} | ${r.errors} | ${fmt(cpuOf(r, 'api'), 3)} | ${fmt(cpuOf(r, 'postgres'), 3)} | ${pct(ratioOf(cpuOf(nest, 'api'), cpuOf(r, 'api')))} | ${own.cost} |`,
    );
  if (nest) row('bare NestJS + Express, constant JSON (ceiling)', nest, '100%');
  for (const c of Object.values(work)) {
    row(`${c.label} (ceiling)`, c, pct(ratioOf(c.requestsPerSec, nest?.requestsPerSec)), {
      rate: '100%',
      cost: '100%',
    });
  }
  for (const [key, r] of Object.entries(results.http)) {
    const ceiling = work[key];
    const own = ceiling
      ? {
          rate: pct(ratioOf(r.requestsPerSec, ceiling.requestsPerSec)),
          cost: pct(ratioOf(cpuOf(ceiling, 'api'), cpuOf(r, 'api'))),
        }
      : undefined;
    row(r.label, r, pct(ratioOf(r.requestsPerSec, nest?.requestsPerSec)), own);
  }
  return rows.join('\n');
}

/** GET /me on the api at LOG_LEVEL=info against a second api at silent, rounds alternated. */
function logCostSection(logCost) {
  if (!logCost) return '';
  const rows = logCost.rounds.map(
    (r, i) =>
      `| ${i + 1} | ${fmt(r.info.requestsPerSec)} | ${fmt(r.info.apiCpuMsPerRequest, 3)} | ${r.info.p99Ms} | ${fmt(r.silent.requestsPerSec)} | ${fmt(r.silent.apiCpuMsPerRequest, 3)} | ${r.silent.p99Ms} | ${pct(r.ratio)} |`,
  );
  return `### The request log line's cost

GET /me on the api at LOG_LEVEL=info (its default: one line per request) and on a second api at
LOG_LEVEL=silent (no line), same data, rounds alternated.

| round | info req/s | info api CPU ms/req | info p99 ms | silent req/s | silent api CPU ms/req | silent p99 ms | info / silent |
|---|---:|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}`;
}

function deliveryTable(results) {
  const bullmq = results.ceilings.bullmq;
  const rows = [
    '| run | deliveries | seconds | per second | ratio to bare BullMQ | not succeeded | duplicates | worker CPU ms/delivery | Postgres CPU ms/delivery | Redis CPU ms/delivery |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  if (bullmq) {
    rows.push(
      `| bare BullMQ, no-op jobs, concurrency ${bullmq.concurrency} (ceiling) | ${fmt(bullmq.jobs)} | ${fmt(bullmq.seconds, 2)} | ${fmt(bullmq.jobsPerSec)} | 100% | - | - | ${fmt(bullmq.cpuMsPerJob, 3)} | - | ${fmt(bullmq.redisCpuMsPerJob, 3)} |`,
    );
  }
  for (const [label, r] of [
    ['one worker process', results.delivery.oneWorker],
    ['two worker processes', results.delivery.twoWorkers],
  ]) {
    if (!r) continue;
    const notSucceeded = Object.entries(r.statusCounts)
      .filter(([status]) => status !== 'succeeded')
      .reduce((sum, [, n]) => sum + n, 0);
    rows.push(
      `| ${label}, concurrency ${r.concurrencyPerWorker} each | ${fmt(r.deliveries)} | ${fmt(r.seconds, 2)} | ${fmt(r.perSec)} | ${pct(ratioOf(r.perSec, bullmq?.jobsPerSec))} | ${notSucceeded} | ${r.duplicates} | ${fmt(cpuOf(r, 'worker'), 3)} | ${fmt(cpuOf(r, 'postgres'), 3)} | ${fmt(cpuOf(r, 'redis'), 3)} |`,
    );
  }
  return rows.join('\n');
}

function latencySection(results) {
  const l = results.delivery.latency;
  if (!l) return 'Not measured in this run.';
  return [
    `Offered: ${fmt(l.submissions)} submissions in ${fmt(l.offerSeconds, 2)} s (${fmt(l.offeredRate)}/s, each fanning out to 3 webhooks), one worker process, idle queue at the start.`,
    '',
    '| figure | p50 ms | p95 ms | p99 ms | max ms | count |',
    '|---|---:|---:|---:|---:|---:|',
    `| submission sent -> webhook received | ${fmt(l.receiptMs.p50, 1)} | ${fmt(l.receiptMs.p95, 1)} | ${fmt(l.receiptMs.p99, 1)} | ${fmt(l.receiptMs.max, 1)} | ${fmt(l.received)} of ${fmt(l.expected)} |`,
    `| POST submission response time | ${fmt(l.responseMs.p50, 1)} | ${fmt(l.responseMs.p95, 1)} | ${fmt(l.responseMs.p99, 1)} | ${fmt(l.responseMs.max, 1)} | ${fmt(l.responses)} (non-200: ${l.failedSubmissions}) |`,
    ...(l.cpuMsPerSubmission
      ? [
          '',
          `What it cost, from the first submission to the last receipt: the machine (both cores) was ${pct(l.machineBusy)} busy; CPU ms per submission (3 deliveries), ` +
            Object.entries(l.cpuMsPerSubmission)
              .map(([role, ms]) => `${role} ${fmt(ms, 2)}`)
              .join(', ') +
            ' (bench: the load generator and the receiver). At this rate batches are small, so each delivery costs the worker and Postgres more than in the throughput runs above.',
        ]
      : []),
  ].join('\n');
}

export function tracingSection(tracing) {
  if (!tracing) return '## Tracing\n\nNot measured in this run (phase `tracing`).';
  const figures = {
    'deliveries/s (one worker)': (r) => r.delivery.perSec,
    'worker CPU ms/delivery': (r) => cpuOf(r.delivery, 'worker'),
    'Postgres CPU ms/delivery': (r) => cpuOf(r.delivery, 'postgres'),
    'receipt p50 ms (300/s)': (r) => r.latency.receiptMs.p50,
    'receipt p99 ms': (r) => r.latency.receiptMs.p99,
    'POST p50 ms': (r) => r.latency.responseMs.p50,
    'api CPU ms/submission': (r) => r.latency.cpuMsPerSubmission.api,
    'worker CPU ms/submission': (r) => r.latency.cpuMsPerSubmission.worker,
  };
  const digits = (name) => (name.startsWith('deliveries') ? 0 : name.includes('CPU') ? 3 : 1);
  const names = Object.keys(figures);
  const runRow = (r) =>
    `| ${r.round} | ${r.mode} | ${names.map((n) => fmt(figures[n](r), digits(n))).join(' | ')} | ${fmt(r.exportedKb)} |`;
  const medianOf = (mode, n) => median(tracing.runs.filter((r) => r.mode === mode).map(figures[n]));
  const modes = tracing.sampleRatio ? ['on', 'sampled'] : ['on'];
  const against = (off, value) => (off ? `${value >= off ? '+' : ''}${pct(value / off - 1)}` : 'n/a');
  const summary = names.map((n) => {
    const off = medianOf('off', n);
    const cells = modes.flatMap((mode) => [fmt(medianOf(mode, n), digits(n)), against(off, medianOf(mode, n))]);
    return `| ${n} | ${fmt(off, digits(n))} | ${cells.join(' | ')} |`;
  });
  const sampled = tracing.sampleRatio
    ? ` A third setting, "sampled", is on with \`OTEL_TRACES_SAMPLER=parentbased_traceidratio\` and \`OTEL_TRACES_SAMPLER_ARG=${tracing.sampleRatio}\`.`
    : '';
  const header = modes.map((mode) => `${mode} | ${mode} against off`).join(' | ');
  return `## Tracing

The cost of OpenTelemetry traces (docs/running.md, "Traces"): ${tracing.rounds} rounds, each running the one-worker
throughput and the 300/s latency runs above with an api and a worker of their own, first with tracing off
(no \`OTEL_EXPORTER_OTLP_ENDPOINT\`: the SDK is not loaded), then on, exporting every span to a local
OTLP/HTTP sink in the bench process that answers at once (exported KB: what it received in that run).
The settings alternate, so a drift of the machine's speed falls on all; the medians compare them.${sampled} Off
costs a delivery about 2 µs of CPU (the no-op tracer's calls, \`node bench/tracing-off.mjs\`), far below
the noise of these runs.

| round | tracing | ${names.join(' | ')} | exported KB |
|---|---|${names.map(() => '---:').join('|')}|---:|
${tracing.runs.map(runRow).join('\n')}

| median | off | ${header} |
|---|---:|${modes.map(() => '---:|---:').join('|')}|
${summary.join('\n')}`;
}

function memorySection(results) {
  const m = results.memory;
  const phases = (role) =>
    Object.entries(m.sampledByPhase[role] ?? {})
      .map(([phase, mb]) => `${phase} ${fmt(mb)}`)
      .join(', ');
  const lines = [
    `- api: peak RSS ${fmt(m.apiPeakMb)} MB (kernel VmHWM); sampled every 200 ms, highest per phase: ${phases('api') || 'n/a'}.`,
    `- worker: peak RSS ${fmt(m.workerPeakMb)} MB (highest VmHWM of the worker processes); sampled: ${phases('worker') || 'n/a'}.`,
  ];
  const rows = [];
  for (const [phase, entry] of Object.entries(m.breakdown ?? {})) {
    const processes = [['api', entry.api], ...(entry.workers ?? []).map((w, i) => [`worker ${i + 1}`, w])];
    for (const [name, b] of processes) {
      if (b)
        rows.push(
          `| ${phase} | ${name} | ${fmt(b.rssMb)} | ${fmt(b.heapTotalMb)} | ${fmt(b.heapUsedMb)} | ${fmt(b.externalMb)} |`,
        );
    }
  }
  if (rows.length > 0) {
    lines.push(
      '',
      "At the end of each phase, from the process's own /metrics (MB):",
      '',
      '| phase | process | RSS | V8 heap total | V8 heap used | external |',
      '|---|---|---:|---:|---:|---:|',
      ...rows,
    );
  }
  return lines.join('\n');
}

function targetsTable(targets) {
  const rows = ['| target | measured | ceiling | ratio | required | result |', '|---|---:|---:|---:|---|---|'];
  for (const t of targets) {
    const value = t.value === null || t.value === undefined ? 'n/a' : fmt(t.value, t.value < 100 ? 1 : 0);
    rows.push(
      `| ${t.name} | ${value} | ${t.ceiling ? fmt(t.ceiling) : '-'} | ${t.ratio === null ? '-' : pct(t.ratio)} | ${t.target} | ${verdict(t.pass)}${t.invalid ? ` (${t.invalid})` : ''} |`,
    );
  }
  return rows.join('\n');
}

function busyRange(busy = {}) {
  const values = Object.values(busy).filter((v) => v !== null);
  if (values.length === 0) return 'n/a';
  const each = Object.entries(busy).map(([phase, v]) => `${phase} ${pct(v)}`);
  return `${pct(Math.min(...values))} to ${pct(Math.max(...values))} (${each.join(', ')})`;
}

function heapFlagsSection(rows) {
  if (!rows) return '## Heap flags\n\nNot measured in this run (phase `heap-flags`).';
  const line = (r) =>
    `| ${r.label} | \`${r.nodeOptions || '(none)'}\` | ${fmt(r.me.requestsPerSec)} | ${fmt(r.me.apiCpuMsPerRequest, 3)} | ` +
    `${fmt(r['webhook-get'].requestsPerSec)} | ${fmt(r['webhook-get'].apiCpuMsPerRequest, 3)} | ${fmt(r.peakRssMb, 1)} |`;
  return `## Heap flags

The same api, started once per setting beside the main one (idle meanwhile), GET /me and GET
/webhooks/{id} measured as above. On Node 24, V8 derives the young generation from the old-space cap: with
\`--max-old-space-size=128\` alone it is a few MB, scavenges run constantly and each request costs several
times the CPU. The image therefore sets \`--max-semi-space-size\` as well (Dockerfile).

| setting | NODE_OPTIONS | GET /me req/s | api CPU ms/req | GET /webhooks/{id} req/s | api CPU ms/req | peak RSS MB |
|---|---|---:|---:|---:|---:|---:|
${rows.map(line).join('\n')}`;
}

/**
 * The reference figures BENCHMARKS.md compares with: \`BENCH_BASELINE\` (a results file of another run;
 * \`none\` for no comparison), by default the one kept in bench/results/baseline/.
 */
export function loadBaseline(path = process.env.BENCH_BASELINE ?? 'bench/results/baseline/node20-4480e99.json') {
  if (path === 'none' || !existsSync(path)) return undefined;
  return JSON.parse(readFileSync(path, 'utf8'));
}

/**
 * This run beside the reference figures kept in bench/results/baseline/ (the same phases run on the
 * service's first delivery engine, on Node 20): per endpoint, throughput and CPU.
 */
function baselineSection(results, baseline) {
  if (!baseline) return '';
  const before = Object.fromEntries(Object.values(baseline.http).map((r) => [r.label, r]));
  const change = (now, then) =>
    now && then ? `${now >= then ? '+' : ''}${(((now - then) / then) * 100).toFixed(0)}%` : 'n/a';
  const rows = [
    '| endpoint | req/s reference | req/s this run | change | api CPU ms/req reference | this run | Postgres CPU ms/req reference | this run |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of Object.values(results.http)) {
    const b = before[r.label];
    if (!b) continue;
    rows.push(
      `| ${r.label} | ${fmt(b.requestsPerSec)} | ${fmt(r.requestsPerSec)} | ${change(r.requestsPerSec, b.requestsPerSec)} | ${fmt(cpuOf(b, 'api'), 3)} | ${fmt(cpuOf(r, 'api'), 3)} | ${fmt(cpuOf(b, 'postgres'), 3)} | ${fmt(cpuOf(r, 'postgres'), 3)} |`,
    );
  }
  const [b1, n1] = [baseline.delivery?.oneWorker, results.delivery?.oneWorker];
  if (b1 && n1) {
    rows.push(
      `| deliveries/s, one worker, instant receiver (worker / Postgres CPU ms per delivery) | ${fmt(b1.perSec)} | ${fmt(n1.perSec)} | ${change(n1.perSec, b1.perSec)} | ${fmt(cpuOf(b1, 'worker'), 3)} | ${fmt(cpuOf(n1, 'worker'), 3)} | ${fmt(cpuOf(b1, 'postgres'), 3)} | ${fmt(cpuOf(n1, 'postgres'), 3)} |`,
    );
  }
  const [bl, nl] = [baseline.delivery?.latency, results.delivery?.latency];
  if (bl && nl) {
    rows.push(
      `| submission-to-receipt p99 ms at ${fmt(bl.offeredRate)} submissions/s (lower is better; p50 reference / this run in the CPU columns' place) | ${fmt(bl.receiptMs.p99, 1)} | ${fmt(nl.receiptMs.p99, 1)} | ${change(nl.receiptMs.p99, bl.receiptMs.p99)} | ${fmt(bl.receiptMs.p50, 1)} | ${fmt(nl.receiptMs.p50, 1)} | - | - |`,
    );
  }
  return `## Against the reference run

The reference figures: \`npm run bench\` of ${baseline.code?.commit ?? '?'} on ${baseline.machine?.node ?? '?'}, this machine,
started ${baseline.startedAt?.slice(0, 16).replace('T', ' ') ?? '?'} UTC${baseline.note ? ` (${baseline.note})` : ''}, quiet (${busyRange(baseline.machine?.busyBefore)}), kept in \`bench/results/baseline/\`: the
service's first delivery engine, whose endpoints do less than this code's (DESIGN 5 and 7: here DELETE
fences attempts and cancels recoveries and manual retries, submissions record skipped deliveries and
count in shards, every POST may carry an Idempotency-Key), so a difference here is the sum of the
runtime, the framework's mechanisms and that behaviour. Throughput on this 2-core VM varies by about
20% between runs of the same code; CPU per request less.

${rows.join('\n')}

The two runtimes differ, measured on this machine (Node 20.20.2 and 24.21.0, the same script each):
\`JSON.stringify\` of a 50-calculator page takes 49.7 us on Node 20 and 30.8 us on Node 24;
\`createHmac('sha256', <Buffer key>)\` 2.0 us and 10.5 us per call, as Node 24 makes a key object on each
call (the signer keeps one per secret: 2.1 us). From \`--max-old-space-size=128\` alone, Node 24's V8
derives a young generation of a few MB, which costs the api several times the CPU per request unless
\`--max-semi-space-size\` is set too, as the image does (Heap flags, above). The load of both runs is
generated by bench/run.mjs on Node 24: from Node 20, the same load generator gives the reference code's
GET /me 7,187 req/s instead of about 5,300, so runs whose load comes from different runtimes are not
comparable.
`;
}

/** The median of the numbers among `values` (null when there are none). */
export const median = (values) => {
  const v = values.filter((x) => typeof x === 'number').sort((a, b) => a - b);
  if (v.length === 0) return null;
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};

/** bench/results/pair-latest.json, written by `npm run bench:pair`, when there is one. */
export function loadPair(path = 'bench/results/pair-latest.json') {
  return existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : undefined;
}

/**
 * Partial runs of the HTTP phases (BENCH_ONLY=ceiling-nest,me,webhooks-list,calculators,log-cost) kept in
 * `dir`, oldest first: each endpoint at the service's defaults beside its own work in a bare app.
 */
export function loadApiRuns(dir = 'bench/results/api-defaults') {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .map((name) => JSON.parse(readFileSync(`${dir}/${name}`, 'utf8')))
    .sort((a, b) => a.startedAt.localeCompare(b.startedAt));
}

const API_ENDPOINTS = [
  ['me', 'GET /me'],
  ['webhooks-list', 'GET /webhooks (20)'],
  ['calculators', 'GET /calculators?limit=50'],
];

/** The kept partial runs of the HTTP phases, one row per run and endpoint. */
function apiRunsSection(runs) {
  if (runs.length === 0) return '';
  const rows = [];
  for (const [i, run] of runs.entries()) {
    for (const [key, label] of API_ENDPOINTS) {
      const r = run.http[key];
      const c = run.ceilings.work?.[key];
      if (!r || !c) continue;
      rows.push(
        `| ${i + 1} | ${label} | ${fmt(r.requestsPerSec)} | ${fmt(c.requestsPerSec)} | ${pct(ratioOf(r.requestsPerSec, c.requestsPerSec))} | ${fmt(cpuOf(r, 'api'), 3)} | ${fmt(cpuOf(c, 'api'), 3)} | ${pct(ratioOf(cpuOf(c, 'api'), cpuOf(r, 'api')))} | ${r.latencyMs.p99} | ${c.latencyMs.p99} | ${r.non2xx + r.errors} |`,
      );
    }
  }
  const runLines = runs.map((run, i) => {
    const logCost = run.logCost?.rounds.map((r) => pct(r.ratio)).join(', ') ?? 'n/a';
    return `${i + 1}. ${run.startedAt.slice(0, 16).replace('T', ' ')} UTC, code ${run.code.commit}${run.code.dirty ? ' (uncommitted changes under src/)' : ''}, \`${run.command}\`; machine CPU busy before the phases ${busyRange(run.machine.busyBefore)}; bare NestJS constant JSON ${fmt(run.ceilings.nest?.requestsPerSec)} req/s; log line (GET /me info / silent, per round) ${logCost}; api peak RSS ${fmt(run.memory.apiPeakMb)} MB.`;
  });
  return `## HTTP at the service's defaults, beside each endpoint's own work

Partial runs of the HTTP phases (\`BENCH_ONLY=ceiling-nest,me,webhooks-list,calculators,log-cost\`), kept in
\`bench/results/api-defaults/\`, on ${runs[0].machine.cpuModel}, ${runs[0].machine.cpus} cores, Node ${runs[0].machine.node}: the api at its
defaults (LOG_LEVEL=info; per-IP and per-key limits on, too high to trigger), each endpoint measured right
after a bare NestJS app doing only its own work (the same Redis call; the same SQL on pg). Three other
engineers ran tests and benchmarks on the same 2 cores during these runs, so req/s moved with their load;
the CPU-cost ratio (the bare app's api CPU per request over the service's) depends much less on it.

${runLines.join('\n')}

| run | endpoint | req/s | its own work req/s | ratio | api CPU ms/req | own work api CPU ms/req | CPU-cost ratio | p99 ms | own work p99 ms | errors |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}
`;
}

/** The reference code and this code, measured in turns (bench/pair.sh), round by round. */
function pairSection(pair, results) {
  if (!pair) return '';
  const share = (x) => (typeof x === 'number' ? `${(x * 100).toFixed(1)}%` : 'n/a');
  const cpu = (r) =>
    r.cpuMsPerDelivery ? ['worker', 'postgres', 'redis'].map((k) => fmt(r.cpuMsPerDelivery[k], 3)).join(' / ') : 'n/a';
  const rows = pair.rounds.map(
    (r, i) =>
      `| ${i + 1} | ${r.before.startedAt?.slice(11, 16) ?? '?'} / ${r.now.startedAt?.slice(11, 16) ?? '?'} | ${fmt(r.before.deliveriesPerSec)} | ${fmt(r.now.deliveriesPerSec)} | ${fmt(r.ratio, 2)}x | ${fmt(r.now.bullmqPerSec)} | ${share(r.shareOfBullmq)} | ${cpu(r.before)} | ${cpu(r.now)} | ${fmt(r.before.receiptP99Ms, 1)} | ${fmt(r.now.receiptP99Ms, 1)} | ${fmt(r.now.responseP99Ms, 1)} |`,
  );
  const { medians } = pair;
  const ceiling = median(pair.rounds.map((r) => r.now.bullmqPerSec));
  const fullCeiling = results.ceilings?.bullmq?.jobsPerSec;
  const speed =
    ceiling && fullCeiling
      ? ` Bare BullMQ made ${fmt(ceiling)} jobs/s here (median) against ${fmt(fullCeiling)} in the full run above (${results.machine?.cpuModel ?? '?'}), a measure of how fast the machine ran in each.`
      : '';
  return `## Against the reference, in turns

\`npm run bench:pair\` (bench/pair.sh), finished ${pair.finishedAt.slice(0, 16).replace('T', ' ')} UTC on ${pair.machine?.cpuModel ?? '?'}
(${pair.machine?.cpus ?? '?'} cores): each round runs the reference code (${pair.rounds[0]?.before.commit ?? '?'} on ${pair.rounds[0]?.before.node ?? '?'}, its bench
given this bench's warm-up and ANALYZE before each phase and \`BENCH_SERVICE_NODE\`: bench/before/4480e99-bench.patch), then this code
(${pair.rounds[0]?.now.commit ?? '?'} on ${pair.rounds[0]?.now.node ?? '?'}), the same phases (\`${pair.phases}\`), one load generator on Node 24.
Both sides of a round see the same machine state, which the full run above and the kept reference
figures, measured apart, do not. Medians: one worker ${fmt(medians.before.deliveriesPerSec)} deliveries/s (reference) against ${fmt(medians.now.deliveriesPerSec)}
(this code), **${fmt(medians.ratio, 2)}x** (median of the rounds' ratios), ${share(medians.shareOfBullmq)} of bare BullMQ;
submission-to-receipt p99 ${fmt(medians.before.receiptP99Ms, 1)} ms against ${fmt(medians.now.receiptP99Ms, 1)} ms.${speed}

| round | started (UTC) reference / this code | deliveries/s reference | this code | ratio | bare BullMQ jobs/s | this code / bare BullMQ | CPU ms per delivery reference (worker / Postgres / Redis) | this code | receipt p99 ms reference | this code | POST response p99 ms this code |
|---:|---|---:|---:|---:|---:|---:|---|---|---:|---:|---:|
${rows.join('\n')}
`;
}

/** BENCHMARKS.md: generated by `npm run bench`, so it always shows the last full run. */
export function renderMarkdown(results, baseline, pair = loadPair(), apiRuns = loadApiRuns()) {
  const { machine, settings } = results;
  const failed = results.targets.filter((t) => t.pass === false).length;
  const measured = results.targets.filter((t) => t.pass !== null).length;
  return `# Benchmarks

Generated by \`npm run bench\` (bench/run.mjs) on ${results.finishedAt}; do not edit by hand, run it again.
The same figures are in \`bench/results/latest.json\`.${
    results.enginePartials
      ? `\nThe phases ${[...new Set(results.enginePartials.flatMap((p) => p.phases))].join(', ')} and their targets are from later partial runs
(\`node bench/render.mjs <partial.json>\`), named in "Slow and dead receivers"; this run's other engine phases,
which measured an earlier engine, are left out (search, an api read, is kept); everything else is this run's.`
      : ''
  }

**${measured - failed} of ${measured} targets pass${failed ? `, ${failed} fail` : ''}.**

## Machine and run

| | |
|---|---|
| CPU | ${machine.cpuModel}, ${machine.cpus} cores |
| RAM | ${fmt(machine.ramGb, 1)} GB |
| OS | ${machine.os} |
| Node | ${machine.node} |
| Postgres | ${machine.postgres} |
| Redis | ${machine.redis} |
| load average (1 min) before / after | ${fmt(machine.loadBefore, 2)} / ${fmt(machine.loadAfter, 2)} |
| machine CPU busy in the second before each phase (bench idle) | ${busyRange(machine.busyBefore)} |
| code | ${results.code.commit}${results.code.dirty ? ' (work tree had uncommitted changes under src/)' : ''} |
| command | \`${results.command}\` |
| settings | ${settings.connections} connections, ${settings.warmupSec} s warm-up then ${settings.durationSec} s measured per endpoint; ${fmt(settings.deliveries)} deliveries per throughput run; ${settings.latencyRate} submissions/s for ${settings.latencyDurationSec} s; worker concurrency ${settings.workerConcurrency ?? 'default (500)'}; admission (DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK, DELIVERY_HOST_*) at the service's defaults; LOG_LEVEL=${settings.logLevel}; NODE_OPTIONS=${settings.nodeOptions || '(none)'} for the api, workers and NestJS ceiling |

Everything runs on this one machine: the api (\`dist/main.js\`, NODE_ENV=production, in-process
worker off), the worker processes (\`dist/worker.js\`), Postgres, Redis, the load generator
(autocannon, in the bench process) and the webhook receiver (a keep-alive Node HTTP server in the
bench process that answers 200 at once). The ceilings run on the same machine in the same run:
a bare NestJS + Express app (bench/ceiling-nest.mjs) answering a constant JSON body, and doing each
measured endpoint's own work with nothing of the service around it (GET /me: the rate limiter's one
Redis script call, same script and keys; GET /webhooks and GET /calculators?limit=50: the service's
own SQL, imported from dist/, on pg, rows as JSON), each measured right before its endpoint; a bare
BullMQ queue whose one Worker (same concurrency as our worker) processes no-op jobs
(bench/ceiling-bullmq.mjs). A busy machine (load average well above 0 before the run) makes
every figure, ceilings included, lower and noisier.

## Targets

${targetsTable(results.targets)}

## HTTP API

Data set: one workspace, 50 calculators, 20 webhooks each bound to 3 calculators (6 calculators
have exactly 3 webhooks; submissions go to those, so each creates 3 deliveries; the "one calculator"
run sends the same load to the first of them only). No worker runs during the HTTP runs, and each
run starts once no Postgres backend of the bench database is active and at least 1 s has passed. POST /webhooks is measured as POST then DELETE of the created webhook on each
connection, so the active count stays at 20; its req/s counts both requests.
CPU ms/req is the CPU time the api process (and the Postgres backends serving the bench
database) used in the measured run divided by the requests answered; the CPU-cost ratio is the
ceiling's api CPU per request over the endpoint's, i.e. the req/s ratio the endpoint would reach
if the api process's own CPU were the only limit. Unlike req/s, CPU per request hardly depends on
what else the machine is doing.

${[httpTable(results), logCostSection(results.logCost), apiRunsSection(apiRuns), heapFlagsSection(results.heapFlags)]
  .filter(Boolean)
  .map((section) => section.trimEnd())
  .join('\n\n')}

${baselineSection(results, baseline)}
${pairSection(pair, results)}
## Delivery

${fmt(settings.deliveries)} deliveries are created through the API with no worker running (the
backlog of the HTTP runs is cleared first), then the worker processes start. Throughput is
deliveries divided by the time from the first request the receiver got to the moment Postgres
shows none pending (every attempt recorded). Each worker runs with the service's default
concurrency unless \`BENCH_WORKER_CONCURRENCY\` is set, and its Postgres pool is \`DATABASE_POOL_SIZE\`
whatever its concurrency.

${deliveryTable(results)}

### Submission-to-receipt latency

${latencySection(results)}

${tracingSection(results.tracing)}

${engineSection(results)}
${filterSection(results)}
## Memory

${memorySection(results)}

## How to run and profile

- \`npm run bench\` (Postgres and Redis on their local default ports, or \`BENCH_PG_URL\`, \`REDIS_URL\`).
  It builds if needed, creates a database \`cw_bench_<id>\` and a queue prefix of its own, and drops
  both at the end. Overrides: \`BENCH_DURATION\`, \`BENCH_WARMUP\`, \`BENCH_CONNECTIONS\`,
  \`BENCH_DELIVERIES\`, \`BENCH_LATENCY_RATE\`, \`BENCH_LATENCY_DURATION\`,
  \`BENCH_WORKER_CONCURRENCY\`, \`BENCH_LOG_LEVEL\` (default info, the service's: a line per request and per attempt), \`BENCH_RATE_LIMIT_PER_MINUTE\`
  (default 1,000,000: the limiter's Redis round trip stays in every request, but it never refuses),
  \`BENCH_WAIT_QUIET=<s>\` (wait up to that long for the machine to be under 25% busy before starting),
  \`BENCH_TRACING_ROUNDS\` (default 2: rounds of the tracing phase, each off then on),
  \`BENCH_TRACING_SAMPLE_RATIO\` (a third setting in each round: on, recording that share of the traces),
  \`BENCH_NODE_OPTIONS\` (NODE_OPTIONS for the api, the workers and the NestJS ceiling; by default the
  image's, from the Dockerfile's \`ENV NODE_OPTIONS\`; set it empty for none).
- \`BENCH_ONLY=webhooks-list,submissions\` runs only those phases (keys: ${results.phaseKeys.join(', ')});
  a partial run writes \`bench/results/partial-<time>.json\` and leaves this file alone.
- \`BENCH_PROFILE=1\` starts the api and the workers with \`--cpu-prof\`; profiles land in
  \`bench/results/profiles/<time>/\`; \`node bench/profile-summary.mjs <file.cpuprofile>\` lists the
  top self-time functions and packages. Profiled runs never overwrite this file.
- \`BENCH_UNPARTITIONED=1\` rebuilds \`deliveries\` and \`delivery_attempts\` unpartitioned once the api has
  migrated them, to measure partitioning's cost against a run without it ("Partitioned delivery tables");
  such runs never overwrite this file.
`;
}
