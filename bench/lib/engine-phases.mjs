// The delivery-engine phases: a receiver's latency must cost a socket and a slot, never a Postgres
// connection. delivery-slow (throughput and Postgres connections with 250 ms receivers),
// delete-hanging (DELETE of a webhook whose attempt hangs on a dead receiver) and isolation (one
// workspace's dead receivers must not delay another's deliveries). Each runs its own worker process
// with the service's default settings against the bench's api, database and queue prefix, and its own
// receivers; each stops them at its end, failed or not. host-slow and host-overload put 20 webhooks at one
// host (one receiver port): the adaptive host limit's growth for a healthy host, its cut for one that
// answers 503 when overloaded; host-slow-floor is host-slow's load attempted with no queue and no
// admission, as many at once as the webhooks' caps allow. Hosts shared by many webhooks: host-fairness (a
// workspace's few deliveries at a host where another's backlog waits), host-proportional (a host whose
// answers slow with its load), instant-one-host and instant-ten-hosts (the engine against instant-floor,
// the same load with the queue and admission taken away: what the attempt itself costs) and host-thousand
// (many hosts, and the admission state they leave in Redis). redis-backlog: what a backlog at a host that
// is down costs Redis and a /metrics scrape. Targets and the BENCHMARKS.md section are here too.
import { Queue } from 'bullmq';
import { Cluster, Redis } from 'ioredis';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { clearInterval, setInterval } from 'node:timers';
import { URL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool, request } from 'undici';
import { apiRequest, postSubmissions } from './http-bench.mjs';
import { PgActivitySampler, postgresBackends, processTree } from './pg-activity.mjs';
import { CpuProbe, freePort, machineBusy, procMemoryMb, spawnNode, stopProcess, waitForHttp } from './processes.mjs';
import { ReceiverGroup } from './receiver-group.mjs';
import { searchPhase } from './search-phase.mjs';
import { createWorkspace, envInt, insertWorkspaces, PG_URL, productEnv, REDIS_URL } from './setup.mjs';

export const ENGINE_PHASE_KEYS = [
  'delivery-slow',
  'delete-hanging',
  'isolation',
  'host-slow',
  'host-slow-floor',
  'host-overload',
  'host-fairness',
  'host-proportional',
  'instant-one-host',
  'instant-ten-hosts',
  'instant-floor',
  'instant-floor-ten',
  'host-thousand',
  'host-thousand-floor',
  'redis-backlog',
  'cluster',
  'search',
];

const SUBMISSION_BODY = { data: { answer: 42, email: 'bench@example.com', total: 123.45 }, finished: true };
const DEFAULT_POOL_SIZE = 10; // the worker's DATABASE_POOL_SIZE default
const DEFAULT_DELIVERY_TIMEOUT_MS = 15_000; // the service's DELIVERY_TIMEOUT_MS default, never overridden here
const DEFAULT_WEBHOOK_CAP = 20; // the service's DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK default

export const engineSettings = () => ({
  slowReceivers: envInt('BENCH_SLOW_RECEIVERS', 20),
  slowDelayMs: envInt('BENCH_SLOW_DELAY_MS', 250),
  slowDeliveries: envInt('BENCH_SLOW_DELIVERIES', 20_000),
  /** delivery-slow stops after this many seconds from the first receipt (the rate is then over what arrived). */
  slowMaxSec: envInt('BENCH_SLOW_MAX_SEC', 150),
  deadWebhooks: envInt('BENCH_DEAD_WEBHOOKS', 50),
  isolationDeadReceivers: 4,
  isolationSubmissionsA: envInt('BENCH_ISOLATION_SUBMISSIONS', 100),
  isolationSubmissionsB: 20,
  isolationSpreadSec: 10,
  /** How long after B's last submission its deliveries may still arrive. */
  isolationWaitSec: envInt('BENCH_ISOLATION_WAIT', 20),
  /** host-slow and host-overload: webhooks at the one host, and deliveries in all. */
  hostWebhooks: 20,
  /** host-slow-floor: attempts at once, as many as host-slow's webhooks' caps allow (20 x 20). */
  slowFloorConcurrency: 20 * DEFAULT_WEBHOOK_CAP,
  hostDeliveries: envInt('BENCH_HOST_DELIVERIES', 10_000),
  hostMaxSec: envInt('BENCH_HOST_MAX_SEC', 90),
  /** host-overload: the receiver answers 503 whenever more than this many requests are open (at 250 ms, at most 120/s). */
  overloadAbove: 30,
  overloadDeliveries: envInt('BENCH_OVERLOAD_DELIVERIES', 3_000),
  /** host-overload's retry schedule, so a 503'd delivery comes back within the phase (the default waits 5 s, then 5 min). */
  overloadRetrySchedule: Array(15).fill('1s').join(','),
  /** host-fairness: A's backlog at the host (hostWebhooks webhooks), then B's submissions spaced over fairnessSpreadSec. */
  fairnessDeliveriesA: envInt('BENCH_FAIRNESS_DELIVERIES', 2_000),
  fairnessSubmissionsB: 20,
  fairnessSpreadSec: 1,
  /** host-proportional: the receiver's delay grows by slowDelayMs for each this many requests open. */
  proportionalSlowsPer: 25,
  proportionalDeliveries: envInt('BENCH_PROPORTIONAL_DELIVERIES', 2_500),
  /** host-proportional's open counts are taken from this long after the first arrival. */
  proportionalSkipSec: 10,
  /** cluster: the Redis Cluster scripts/redis-cluster.sh starts, and the queue shards on it. */
  clusterNodes: process.env.BENCH_REDIS_CLUSTER_NODES ?? '127.0.0.1:7100,127.0.0.1:7101,127.0.0.1:7102',
  clusterShards: envInt('BENCH_QUEUE_SHARDS', 16),
  /** instant-one-host, instant-ten-hosts: deliveries in all, and the hosts of the second. */
  instantDeliveries: envInt('BENCH_INSTANT_DELIVERIES', 20_000),
  instantHosts: 10,
  /** host-thousand: hosts (receiver ports), webhooks at each, deliveries in all, its time cap. */
  thousandHosts: 1_000,
  thousandWebhooksPerHost: 10,
  thousandDeliveries: envInt('BENCH_THOUSAND_DELIVERIES', 100_000),
  thousandMaxSec: envInt('BENCH_THOUSAND_MAX_SEC', 300),
  /** redis-backlog: deliveries pending at a host that refuses connections, and /metrics scrapes at each backlog. */
  backlogDeliveries: envInt('BENCH_BACKLOG_DELIVERIES', 30_000),
  backlogScrapes: 10,
  /** redis-backlog waits this long at most for every delivery's first attempt (then measures anyway). */
  backlogMaxSec: envInt('BENCH_BACKLOG_MAX_SEC', 60),
  /** The api's MAX_WEBHOOKS_PER_WORKSPACE default: host-thousand's webhooks are spread over workspaces of this many. */
  webhooksPerWorkspace: 100,
  /** Passed to the workers only when set in the bench's environment; otherwise the services' defaults. */
  workerConcurrency: envInt('BENCH_WORKER_CONCURRENCY', null),
  databasePoolSize: envInt('DATABASE_POOL_SIZE', null),
  deliveryTimeoutMs: DEFAULT_DELIVERY_TIMEOUT_MS,
});

const round = (n, digits = 1) => (n === null || n === undefined ? null : Number(n.toFixed(digits)));

function percentiles(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] : null);
  return { p50: round(at(0.5)), p95: round(at(0.95)), p99: round(at(0.99)), max: round(sorted.at(-1) ?? null) };
}

/** Waits until `done()` or `timeoutMs`; fails at once if a worker died. Returns whether `done()` held. */
async function waitUntil(done, timeoutMs, workers = []) {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await done()) return true;
    for (const w of workers) {
      if (w.child.exitCode !== null || w.child.signalCode !== null) {
        throw new Error(`${w.name} exited during the phase:\n${w.output()}`);
      }
    }
    if (performance.now() > deadline) return false;
    await sleep(20);
  }
}

/** `fn` over `items`, at most `limit` at a time; the results in the items' order. */
async function mapLimit(items, limit, fn) {
  const out = new Array(items.length);
  let next = 0;
  const one = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, one));
  return out;
}

/** Open files of a process: its soft limit and how many it has open now (null where /proc does not say). */
function openFiles(pid = 'self') {
  try {
    const limit = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'))?.[1];
    return { limit: limit === undefined ? null : limit, open: readdirSync(`/proc/${pid}/fd`).length };
  } catch {
    return { limit: null, open: null };
  }
}

/**
 * The phases over the run's context: `db` (pg client on the bench database), `apiUrl`, `dbName`,
 * `queuePrefix`, `redisPid`, `log`, `sampler` (the run's RssSampler), `nodeOptions`, `logLevel`, and
 * `clearBacklog()` (cancels pending deliveries and empties the queue; called with no worker running).
 */
export function enginePhases(ctx) {
  const settings = engineSettings();
  const { db, apiUrl, log } = ctx;
  const pgPort = Number(new URL(PG_URL).port || 5432);

  const idleWorkerRss = [];
  const workerEnv = (metricsPort, extra = {}) =>
    productEnv(
      { dbName: ctx.dbName, queuePrefix: ctx.queuePrefix },
      {
        LOG_LEVEL: ctx.logLevel,
        METRICS_PORT: String(metricsPort),
        ...(settings.workerConcurrency !== null ? { WORKER_CONCURRENCY: String(settings.workerConcurrency) } : {}),
        ...(settings.databasePoolSize !== null ? { DATABASE_POOL_SIZE: String(settings.databasePoolSize) } : {}),
        ...(ctx.nodeOptions ? { NODE_OPTIONS: ctx.nodeOptions } : {}),
        ...extra,
      },
    );

  async function startWorker(name, { waitReady = true, env = {}, entry = 'dist/worker.js' } = {}) {
    const port = await freePort();
    const handle = spawnNode(name, entry, workerEnv(port, env), ctx.nodeFlags ?? []);
    // The floor's process is no worker of the product's: its memory is not the worker's.
    ctx.sampler.track(entry === 'dist/worker.js' ? 'worker' : 'floor-worker', handle);
    handle.metricsUrl = `http://127.0.0.1:${port}/metrics`;
    if (waitReady) {
      await waitForHttp(handle, handle.metricsUrl);
      // The worker's memory before any delivery: what the stack costs, the floor under every phase's peak.
      if (entry === 'dist/worker.js') idleWorkerRss.push(procMemoryMb(handle.pid, 'VmRSS'));
    }
    return handle;
  }

  const apiCall = (apiKey, method, path, body) => apiRequest(apiUrl, apiKey, method, path, body);

  /** A workspace of its own with one calculator, and one webhook per url bound to that calculator. */
  async function workspaceWithWebhooks(name, urls) {
    const env = productEnv({ dbName: ctx.dbName, queuePrefix: ctx.queuePrefix }, { LOG_LEVEL: ctx.logLevel });
    const { apiKey, calculators } = await createWorkspace(db, name, env, 1);
    return { apiKey, calculator: calculators[0], webhooks: await createWebhooks(apiKey, calculators[0], name, urls) };
  }

  /** One webhook per url (POST /webhooks, one after another), each bound to the calculator; their ids. */
  async function createWebhooks(apiKey, calculator, name, urls) {
    const webhooks = [];
    for (const [i, url] of urls.entries()) {
      const { data } = await apiCall(apiKey, 'POST', '/api/v1/webhooks', {
        url: `${url}/hook/${i}`,
        name: `${name} ${i}`,
        calculators: [calculator],
      });
      webhooks.push(data.id);
    }
    return webhooks;
  }

  /** `count` submissions to the workspace's calculator, `concurrency` at a time; fails on any non-200. */
  const submit = (ws, count, concurrency = 16) =>
    postSubmissions(apiUrl, ws.apiKey, {
      count,
      concurrency,
      calculatorOf: () => ws.calculator,
      body: SUBMISSION_BODY,
    });

  const deliveriesOf = async (webhooks, status) =>
    Number(
      (
        await db.query(
          `SELECT count(*)::int AS n FROM deliveries WHERE webhook_id = ANY($1::varchar[])${status ? ' AND status = $2' : ''}`,
          status ? [webhooks, status] : [webhooks],
        )
      ).rows[0].n,
    );

  const statusCounts = async (webhooks) =>
    Object.fromEntries(
      (
        await db.query(
          `SELECT status, count(*)::int AS n FROM deliveries WHERE webhook_id = ANY($1::varchar[]) GROUP BY status`,
          [webhooks],
        )
      ).rows.map((r) => [r.status, r.n]),
    );

  // ------------------------------------------------------------------------------------------ delivery-slow

  async function deliverySlow() {
    const n = settings.slowReceivers;
    const receivers = new ReceiverGroup(n, { delayMs: settings.slowDelayMs });
    let worker;
    let activity;
    try {
      await receivers.listen();
      const ws = await workspaceWithWebhooks('bench-slow', receivers.urls);
      const submissions = Math.ceil(settings.slowDeliveries / n);
      await ctx.clearBacklog();
      log(
        `delivery-slow: creating ${submissions} submissions x ${n} webhooks (${submissions * n} deliveries), no worker running`,
      );
      await submit(ws, submissions);
      const expected = await deliveriesOf(ws.webhooks, 'pending');
      if (expected !== submissions * n) throw new Error(`expected ${submissions * n} pending, found ${expected}`);
      const busyBefore = await machineBusy();
      log(`delivery-slow: one worker, default settings; ${n} receivers answering after ${settings.slowDelayMs} ms`);
      worker = await startWorker('worker-slow', { waitReady: false });
      activity = new PgActivitySampler({
        connectionString: `${PG_URL}/${ctx.dbName}`,
        dbName: ctx.dbName,
        pgPort,
        ownerPids: () => [worker.pid],
        intervalMs: 100,
      });
      await activity.start();
      const cpu = new CpuProbe(async () => ({
        worker: processTree(worker.pid),
        postgres: await postgresBackends(db, ctx.dbName, [activity.samplerPid]),
        redis: ctx.redisPid ? [ctx.redisPid] : [],
      }));
      // CPU from the first receipt on, so the worker's start-up is not counted.
      await waitUntil(() => receivers.unique > 0, 60_000, [worker]);
      const cpuBefore = await cpu.snapshot();
      let seen = -1;
      let since = performance.now();
      const capAt = receivers.firstAt + settings.slowMaxSec * 1000;
      const complete = await waitUntil(
        () => {
          if (receivers.unique !== seen) [seen, since] = [receivers.unique, performance.now()];
          else if (performance.now() - since > 30_000)
            throw new Error(`delivery-slow stalled at ${seen} of ${expected}`);
          return receivers.unique >= expected;
        },
        capAt - performance.now(),
        [worker],
      );
      // Every attempt recorded (the last receipts' answers come delayMs later).
      if (complete) await waitUntil(async () => (await deliveriesOf(ws.webhooks, 'pending')) === 0, 30_000, [worker]);
      const doneAt = performance.now();
      const cpuUsed = cpu.since(cpuBefore, await cpu.snapshot());
      const delivered = complete ? expected : receivers.unique;
      const pg = await activity.stop();
      activity = null;
      const seconds = (doneAt - receivers.firstAt) / 1000;
      return {
        receivers: n,
        receiverDelayMs: settings.slowDelayMs,
        submissions,
        deliveries: expected,
        delivered,
        complete,
        seconds: round(seconds, 2),
        perSec: round(delivered / seconds),
        duplicates: receivers.duplicates,
        requestsPerReceiver: { min: Math.min(...receivers.perServer), max: Math.max(...receivers.perServer) },
        statusCounts: await statusCounts(ws.webhooks),
        databasePoolSize: settings.databasePoolSize ?? DEFAULT_POOL_SIZE,
        databasePoolSizeSource: settings.databasePoolSize === null ? 'default' : 'DATABASE_POOL_SIZE',
        postgres: pg,
        cpuMsPerDelivery: Object.fromEntries(
          Object.entries(cpuUsed).map(([role, ms]) => [role, delivered > 0 ? round(ms / delivered, 3) : null]),
        ),
        busyBefore,
        workerPeakRssMb: round(await stopProcess(worker)),
      };
    } finally {
      if (activity) await activity.stop().catch(() => undefined);
      await receivers.close();
      if (worker) await stopProcess(worker);
    }
  }

  // ------------------------------------------------------------------------------------------ delete-hanging

  const queue = () => new Queue('deliveries', { connection: { url: REDIS_URL }, prefix: ctx.queuePrefix });

  /** One round: `count` webhooks on dead receivers, one submission, then DELETE them all `mode`ly. */
  async function deleteRound(worker, mode) {
    const count = settings.deadWebhooks;
    const dead = new ReceiverGroup(count, { hang: true });
    const pool = new Pool(apiUrl, { connections: count });
    try {
      await dead.listen();
      const ws = await workspaceWithWebhooks(`bench-delete-${mode}`, dead.urls);
      const submittedAt = performance.now();
      await submit(ws, 1, 1);
      const allArrived = await waitUntil(() => dead.unique >= count, 30_000, [worker]);
      const arrived = dead.unique;
      const arrivalMs = round(performance.now() - submittedAt);
      if (!allArrived) log(`delete-hanging (${mode}): only ${arrived} of ${count} requests arrived in 30 s`);
      // Warm the connections, so a DELETE's time is not a TCP connect's.
      await Promise.all(
        Array.from({ length: mode === 'concurrent' ? count : 1 }, async () => {
          const response = await pool.request({
            method: 'GET',
            path: '/api/v1/me',
            headers: { 'x-ac-api-key': ws.apiKey },
          });
          await response.body.dump();
        }),
      );
      const latencies = [];
      const statuses = {};
      const remove = async (id) => {
        const started = performance.now();
        let status;
        try {
          const response = await pool.request({
            method: 'DELETE',
            path: `/api/v1/webhooks/${id}`,
            headers: { 'x-ac-api-key': ws.apiKey },
          });
          await response.body.dump();
          status = String(response.statusCode);
        } catch (error) {
          status = error.code ?? error.message;
        }
        latencies.push(performance.now() - started);
        statuses[status] = (statuses[status] ?? 0) + 1;
      };
      const started = performance.now();
      if (mode === 'sequential') {
        for (const id of ws.webhooks) await remove(id);
      } else {
        await Promise.all(ws.webhooks.map(remove));
      }
      const totalMs = round(performance.now() - started);
      const requestsWhenDone = dead.requests;
      return {
        webhooks: count,
        arrived,
        arrivalMs,
        deleteMs: percentiles(latencies),
        totalMs,
        statuses,
        failed: Object.entries(statuses)
          .filter(([s]) => !/^2\d\d$/.test(s))
          .reduce((sum, [, k]) => sum + k, 0),
        /** Requests the dead receivers had got when the last DELETE answered (first attempts: `arrived`). */
        deadRequestsWhenDone: requestsWhenDone,
        statusCountsAfter: await statusCounts(ws.webhooks),
      };
    } finally {
      await pool.close();
      await dead.close(); // the attempts still hanging get a reset now
    }
  }

  async function deleteHanging() {
    await ctx.clearBacklog();
    const busyBefore = await machineBusy();
    let worker;
    const q = queue();
    try {
      worker = await startWorker('worker-delete');
      const rounds = {};
      for (const mode of ['sequential', 'concurrent']) {
        log(`delete-hanging: ${settings.deadWebhooks} attempts hanging on dead receivers, DELETE ${mode}`);
        rounds[mode] = await deleteRound(worker, mode);
        // The next round starts with every worker slot free (its attempts were reset by the close).
        const idle = await waitUntil(async () => (await q.getActiveCount()) === 0, 30_000, [worker]);
        if (!idle) log('delete-hanging: jobs still active 30 s after the round');
      }
      return {
        deliveryTimeoutMs: settings.deliveryTimeoutMs,
        ...rounds,
        busyBefore,
        workerPeakRssMb: round(await stopProcess(worker)),
      };
    } finally {
      await q.close();
      if (worker) await stopProcess(worker);
    }
  }

  // ------------------------------------------------------------------------------------------ isolation

  /**
   * `count` submissions to the workspace's calculator spaced evenly over `spreadSec`, sent on `pool`
   * without waiting for the answers; each carries its sequence number (data.benchSeq), its send time goes
   * in `sentAt`. Returns the failures (by status or error) and when sending began and all were answered.
   */
  async function spacedSubmissions(pool, ws, count, spreadSec, sentAt) {
    const failures = {};
    const fail = (reason) => (failures[reason] = (failures[reason] ?? 0) + 1);
    const inflight = [];
    const spacingMs = (spreadSec * 1000) / count;
    const startedAt = performance.now();
    for (let seq = 0; seq < count; seq += 1) {
      await sleep(Math.max(0, startedAt + seq * spacingMs - performance.now()));
      sentAt[seq] = performance.now();
      const body = { ...SUBMISSION_BODY, data: { ...SUBMISSION_BODY.data, benchSeq: seq } };
      inflight.push(
        pool
          .request({
            method: 'POST',
            path: `/api/v1/calculators/${ws.calculator}/submissions`,
            headers: { 'x-ac-api-key': ws.apiKey, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          })
          .then(async (response) => {
            await response.body.dump();
            if (response.statusCode !== 200) fail(response.statusCode);
          })
          .catch((error) => fail(error.code ?? error.message)),
      );
    }
    await Promise.all(inflight);
    return { failures, startedAt, endedAt: performance.now() };
  }

  async function isolation() {
    const s = settings;
    const dead = new ReceiverGroup(s.isolationDeadReceivers, { hang: true });
    const healthy = new ReceiverGroup(1);
    const sentAt = new Array(s.isolationSubmissionsB);
    const receipts = new Map(); // seq -> ms from submission sent to receipt
    healthy.onPayload = (payload, at) => {
      const seq = payload?.data?.data?.benchSeq;
      if (Number.isInteger(seq) && sentAt[seq] !== undefined) receipts.set(seq, at - sentAt[seq]);
    };
    let worker;
    const pool = new Pool(apiUrl, { connections: 4 });
    try {
      await dead.listen();
      await healthy.listen();
      const a = await workspaceWithWebhooks('bench-iso-a', dead.urls);
      const b = await workspaceWithWebhooks('bench-iso-b', healthy.urls);
      await ctx.clearBacklog();
      const busyBefore = await machineBusy();
      worker = await startWorker('worker-isolation');
      log(
        `isolation: workspace A ${s.isolationSubmissionsA} submissions x ${s.isolationDeadReceivers} dead receivers, then B ${s.isolationSubmissionsB} over ${s.isolationSpreadSec} s`,
      );
      await submit(a, s.isolationSubmissionsA);
      // A's load is in flight once the dead receivers stop getting new requests (or after 15 s).
      let seen = -1;
      let since = performance.now();
      await waitUntil(
        () => {
          if (dead.requests !== seen) [seen, since] = [dead.requests, performance.now()];
          return dead.requests > 0 && performance.now() - since > 1000;
        },
        15_000,
        [worker],
      );
      const aInFlight = dead.requests;
      const {
        failures,
        startedAt: t0,
        endedAt: lastSentAt,
      } = await spacedSubmissions(pool, b, s.isolationSubmissionsB, s.isolationSpreadSec, sentAt);
      await waitUntil(() => receipts.size >= s.isolationSubmissionsB, s.isolationWaitSec * 1000, [worker]);
      const endAt = performance.now();
      const missing = sentAt.map((at, seq) => (receipts.has(seq) ? null : endAt - at)).filter((v) => v !== null);
      const result = {
        deadReceivers: s.isolationDeadReceivers,
        submissionsA: s.isolationSubmissionsA,
        deliveriesA: s.isolationSubmissionsA * s.isolationDeadReceivers,
        aRequestsInFlightWhenBStarted: aInFlight,
        aRequestsAtEnd: dead.requests,
        submissionsB: s.isolationSubmissionsB,
        bSpreadSec: round((lastSentAt - t0) / 1000, 2),
        bFailedSubmissions: Object.values(failures).reduce((x, y) => x + y, 0),
        bFailures: failures,
        received: receipts.size,
        waitedAfterLastSec: round((endAt - lastSentAt) / 1000, 2),
        receiptMs: percentiles([...receipts.values()]),
        /** A missing delivery took at least this long (from its submission to the end of the wait). */
        missingAtLeastMs: missing.length ? round(Math.max(...missing)) : null,
        busyBefore,
      };
      await dead.close(); // first, so the worker's graceful stop does not wait for hanging attempts
      result.workerPeakRssMb = round(await stopProcess(worker));
      return result;
    } finally {
      await pool.close();
      await dead.close();
      await healthy.close();
      if (worker) await stopProcess(worker);
    }
  }

  // ------------------------------------------------------------------------------ host-slow, host-overload

  // Every other delivery was cancelled before the phase (clearBacklog): the pending ones are the phase's.
  const countPending = async () =>
    Number((await db.query(`SELECT count(*)::int AS n FROM deliveries WHERE status = 'pending'`)).rows[0].n);

  /**
   * Listens on `receivers`; `prepare(urls)` creates the webhooks and returns `{ webhooks, submitAll }`;
   * `submitAll()` makes the deliveries with the backlog cleared and no worker running. Then one worker,
   * until every delivery has arrived and none is pending, or `maxSec` after the first receipt.
   * `started(worker)` runs once the worker is spawned; `ended(worker)` once the deliveries ended (or the
   * cap), the worker still up; `stopped()` once it has stopped. Receivers closed and worker stopped at
   * the end, failed or not.
   */
  async function drainAtHosts(
    name,
    receivers,
    prepare,
    { maxSec = settings.hostMaxSec, workerEnv = {}, entry, started, ended, stopped } = {},
  ) {
    let worker;
    try {
      await receivers.listen();
      const { webhooks, submitAll } = await prepare(receivers.urls);
      await ctx.clearBacklog();
      await submitAll();
      const expected = await deliveriesOf(webhooks, 'pending');
      const busyBefore = await machineBusy();
      worker = await startWorker(`worker-${name}`, { waitReady: false, env: workerEnv, entry });
      started?.(worker);
      if (!(await waitUntil(() => receivers.requests > 0, 60_000, [worker]))) {
        throw new Error(`${name}: no request reached the receivers within 60 s`);
      }
      // CPU from the first request on (the worker's start-up not counted), by process; the receivers are
      // in this process, with its polling.
      const cpu = new CpuProbe(async () => ({
        worker: [worker.pid],
        postgres: await postgresBackends(db, ctx.dbName),
        redis: ctx.redisPid ? [ctx.redisPid] : [],
        bench: [process.pid],
      }));
      const cpuBefore = await cpu.snapshot();
      const receivedBefore = receivers.unique;
      const deadline = receivers.firstAt + maxSec * 1000;
      // The receipts first (no query meanwhile), then every answer recorded.
      await waitUntil(() => receivers.unique >= expected, deadline - performance.now(), [worker]);
      let pending = expected;
      const done = await waitUntil(async () => (pending = await countPending()) === 0, deadline - performance.now(), [
        worker,
      ]);
      const seconds = (performance.now() - receivers.firstAt) / 1000;
      const cpuUsed = cpu.since(cpuBefore, await cpu.snapshot());
      const measured = receivers.unique - receivedBefore;
      const cpuMsPerDelivery = Object.fromEntries(
        Object.entries(cpuUsed).map(([role, ms]) => [role, measured > 0 ? round(ms / measured, 3) : null]),
      );
      const atEnd = ended ? await ended(worker) : null;
      const counts = await statusCounts(webhooks);
      const workerPeakRssMb = round(await stopProcess(worker));
      return {
        receivers,
        webhooks,
        expected,
        done,
        pending,
        seconds,
        cpuMsPerDelivery,
        busyBefore,
        atEnd,
        afterStop: stopped ? await stopped() : null,
        statusCounts: counts,
        workerPeakRssMb,
      };
    } finally {
      await receivers.close();
      if (worker) await stopProcess(worker);
    }
  }

  /** `hostWebhooks` webhooks at one receiver port, `deliveries` deliveries (drainAtHosts). */
  const oneHost = (name, deliveries, receiverOptions, workerEnv, entry = undefined) =>
    drainAtHosts(
      name,
      new ReceiverGroup(1, receiverOptions),
      async ([url]) => {
        const ws = await workspaceWithWebhooks(name, Array(settings.hostWebhooks).fill(url));
        const submissions = Math.ceil(deliveries / settings.hostWebhooks);
        return {
          webhooks: ws.webhooks,
          submitAll: async () => {
            log(
              `${name}: ${submissions} submissions x ${settings.hostWebhooks} webhooks at one host, no worker running`,
            );
            await submit(ws, submissions);
          },
        };
      },
      { workerEnv, entry },
    );

  const median = (values) => percentiles(values).p50;

  /** host-slow, or (floor) its load attempted by bench/floor-worker.mjs as many at once as the caps allow. */
  async function hostSlow(floor = false) {
    const delayMs = settings.slowDelayMs;
    const name = floor ? 'host-slow-floor' : 'host-slow';
    log(
      `${name}: ${floor ? `the floor, ${settings.slowFloorConcurrency} at once` : 'one worker, default settings'}; one receiver answering after ${delayMs} ms`,
    );
    const r = await oneHost(
      name,
      settings.hostDeliveries,
      { delayMs },
      floor ? { FLOOR_CONCURRENCY: String(settings.slowFloorConcurrency) } : {},
      floor ? 'bench/floor-worker.mjs' : undefined,
    );
    const after = r.receivers.arrivals.filter(([at]) => at - r.receivers.firstAt >= 5_000);
    return {
      concurrency: floor ? settings.slowFloorConcurrency : null,
      workerPeakRssMb: floor ? null : r.workerPeakRssMb,
      webhooks: settings.hostWebhooks,
      receiverDelayMs: delayMs,
      deliveries: r.expected,
      complete: r.done,
      seconds: round(r.seconds, 2),
      perSec: round((r.expected - r.pending) / r.seconds),
      maxOpen: r.receivers.maxOpen,
      medianOpenAfter5s: median(after.map(([, open]) => open)),
      statusCounts: r.statusCounts,
      busyBefore: r.busyBefore,
    };
  }

  async function hostOverload() {
    const delayMs = settings.slowDelayMs;
    log(`host-overload: one receiver answering 503 above ${settings.overloadAbove} open, else 200 after ${delayMs} ms`);
    const r = await oneHost(
      'host-overload',
      settings.overloadDeliveries,
      { delayMs, overloadAbove: settings.overloadAbove },
      { DELIVERY_RETRY_SCHEDULE: settings.overloadRetrySchedule },
    );
    const after = r.receivers.arrivals.filter(([at]) => at - r.receivers.firstAt >= 5_000);
    const refused = after.filter(([, , status]) => status === 503).length;
    return {
      webhooks: settings.hostWebhooks,
      receiverDelayMs: delayMs,
      overloadAbove: settings.overloadAbove,
      retrySchedule: settings.overloadRetrySchedule,
      deliveries: r.expected,
      complete: r.done,
      seconds: round(r.seconds, 2),
      perSec: round((r.expected - r.pending) / r.seconds),
      requests: r.receivers.requests,
      requestsAfter5s: after.length,
      percent503After5s: after.length ? round((100 * refused) / after.length, 2) : null,
      maxOpen: r.receivers.maxOpen,
      medianOpenAfter5s: median(after.map(([, open]) => open)),
      statusCounts: r.statusCounts,
      workerPeakRssMb: r.workerPeakRssMb,
      busyBefore: r.busyBefore,
    };
  }

  // ------------------------------------------------------------------------------ hosts shared by webhooks

  /**
   * Workspace A's backlog waits at a host answering after slowDelayMs; workspace B's webhook at the same
   * host (another path) then gets a few submissions. B's deliveries are told apart by the payload's
   * webhookId; each one's time runs from its submission's send to its receipt.
   */
  async function hostFairness() {
    const s = settings;
    const receivers = new ReceiverGroup(1, { delayMs: s.slowDelayMs });
    const sentAt = new Array(s.fairnessSubmissionsB);
    const receipts = new Map(); // seq -> ms from submission sent to receipt
    let bWebhook = null;
    receivers.onPayload = (payload, at) => {
      const seq = payload?.data?.data?.benchSeq;
      if (payload?.webhookId === bWebhook && Number.isInteger(seq) && sentAt[seq] !== undefined) {
        receipts.set(seq, at - sentAt[seq]);
      }
    };
    let worker;
    const pool = new Pool(apiUrl, { connections: 4 });
    try {
      const [url] = await receivers.listen();
      const a = await workspaceWithWebhooks('bench-fair-a', Array(s.hostWebhooks).fill(url));
      const b = await workspaceWithWebhooks('bench-fair-b', [`${url}/b`]);
      [bWebhook] = b.webhooks;
      const submissionsA = Math.ceil(s.fairnessDeliveriesA / s.hostWebhooks);
      await ctx.clearBacklog();
      log(`host-fairness: A ${submissionsA} submissions x ${s.hostWebhooks} webhooks at one host, no worker running`);
      await submit(a, submissionsA);
      const deliveriesA = await deliveriesOf(a.webhooks, 'pending');
      const busyBefore = await machineBusy();
      worker = await startWorker('worker-host-fairness', { waitReady: false });
      if (!(await waitUntil(() => receivers.requests > 0, 60_000, [worker]))) {
        throw new Error('host-fairness: no request reached the receiver within 60 s');
      }
      const aPendingWhenBStarted = await deliveriesOf(a.webhooks, 'pending');
      log(
        `host-fairness: ${aPendingWhenBStarted} of A pending; B ${s.fairnessSubmissionsB} over ${s.fairnessSpreadSec} s`,
      );
      const { failures, startedAt, endedAt } = await spacedSubmissions(
        pool,
        b,
        s.fairnessSubmissionsB,
        s.fairnessSpreadSec,
        sentAt,
      );
      const deadline = receivers.firstAt + s.hostMaxSec * 1000;
      await waitUntil(() => receipts.size >= s.fairnessSubmissionsB, deadline - performance.now(), [worker]);
      const bEndAt = performance.now();
      const bMissing = sentAt.map((at, seq) => (receipts.has(seq) ? null : bEndAt - at)).filter((v) => v !== null);
      await waitUntil(() => receivers.unique >= deliveriesA + receipts.size, deadline - performance.now(), [worker]);
      let pending = deliveriesA;
      const done = await waitUntil(async () => (pending = await countPending()) === 0, deadline - performance.now(), [
        worker,
      ]);
      const seconds = (performance.now() - receivers.firstAt) / 1000;
      const aPendingAtEnd = done ? 0 : await deliveriesOf(a.webhooks, 'pending');
      const result = {
        webhooksA: s.hostWebhooks,
        receiverDelayMs: s.slowDelayMs,
        deliveriesA,
        aPendingWhenBStarted,
        submissionsB: s.fairnessSubmissionsB,
        bSpreadSec: round((endedAt - startedAt) / 1000, 2),
        bFailedSubmissions: Object.values(failures).reduce((x, y) => x + y, 0),
        bFailures: failures,
        received: receipts.size,
        receiptMs: percentiles([...receipts.values()]),
        /** A missing delivery of B took at least this long (from its submission to the end of B's wait). */
        missingAtLeastMs: bMissing.length ? round(Math.max(...bMissing)) : null,
        complete: done,
        pendingAtEnd: pending,
        seconds: round(seconds, 2),
        aPerSec: round((deliveriesA - aPendingAtEnd) / seconds),
        maxOpen: receivers.maxOpen,
        statusCountsA: await statusCounts(a.webhooks),
        statusCountsB: await statusCounts(b.webhooks),
        busyBefore,
      };
      result.workerPeakRssMb = round(await stopProcess(worker));
      return result;
    } finally {
      await pool.close();
      await receivers.close();
      if (worker) await stopProcess(worker);
    }
  }

  async function hostProportional() {
    const s = settings;
    log(`host-proportional: one receiver answering after ${s.slowDelayMs} ms x (1 + open / ${s.proportionalSlowsPer})`);
    const r = await oneHost(
      'host-proportional',
      s.proportionalDeliveries,
      { delayMs: s.slowDelayMs, slowsPer: s.proportionalSlowsPer },
      {},
    );
    const after = r.receivers.arrivals.filter(([at]) => at - r.receivers.firstAt >= s.proportionalSkipSec * 1000);
    return {
      webhooks: s.hostWebhooks,
      receiverDelayMs: s.slowDelayMs,
      slowsPer: s.proportionalSlowsPer,
      skipSec: s.proportionalSkipSec,
      deliveries: r.expected,
      complete: r.done,
      seconds: round(r.seconds, 2),
      perSec: round((r.expected - r.pending) / r.seconds),
      requests: r.receivers.requests,
      maxOpen: r.receivers.maxOpen,
      arrivalsAfterSkip: after.length,
      medianOpenAfterSkip: median(after.map(([, open]) => open)),
      statusCounts: r.statusCounts,
      workerPeakRssMb: r.workerPeakRssMb,
      busyBefore: r.busyBefore,
    };
  }

  /** `hostWebhooks` webhooks spread over `hosts` receivers answering at once; instantDeliveries deliveries. */
  async function instantHosts(name, hosts, workerEnv = {}, entry = undefined) {
    const s = settings;
    log(`${name}: ${s.hostWebhooks} webhooks over ${hosts} receiver(s) answering 200 at once`);
    const r = await drainAtHosts(
      name,
      new ReceiverGroup(hosts),
      async (urls) => {
        const ws = await workspaceWithWebhooks(
          name,
          Array.from({ length: s.hostWebhooks }, (_, i) => urls[i % hosts]),
        );
        const submissions = Math.ceil(s.instantDeliveries / s.hostWebhooks);
        return {
          webhooks: ws.webhooks,
          submitAll: async () => {
            log(`${name}: ${submissions} submissions x ${s.hostWebhooks} webhooks, no worker running`);
            await submit(ws, submissions);
          },
        };
      },
      { workerEnv, entry },
    );
    return {
      hosts,
      webhooks: s.hostWebhooks,
      deliveries: r.expected,
      complete: r.done,
      seconds: round(r.seconds, 2),
      perSec: round((r.expected - r.pending) / r.seconds),
      duplicates: r.receivers.duplicates,
      maxOpen: r.receivers.maxOpen,
      requestsPerHost: { min: Math.min(...r.receivers.perServer), max: Math.max(...r.receivers.perServer) },
      statusCounts: r.statusCounts,
      // The floor's process is no worker of the product's.
      workerPeakRssMb: entry ? null : r.workerPeakRssMb,
      cpuMsPerDelivery: r.cpuMsPerDelivery,
      busyBefore: r.busyBefore,
    };
  }

  /**
   * instant-ten-hosts' load with one worker on the Redis Cluster (QUEUE_SHARDS queue shards; an api of its
   * own on the cluster enqueues) against the single Redis, in the same run; then where the keys are.
   */
  async function clusterPhase() {
    const clusterEnv = { REDIS_CLUSTER_NODES: settings.clusterNodes, QUEUE_SHARDS: String(settings.clusterShards) };
    execFileSync('bash', ['scripts/redis-cluster.sh', 'start'], { stdio: 'ignore' });
    const single = await instantHosts('cluster-single-redis', settings.instantHosts);
    const port = await freePort();
    const api = spawnNode(
      'api-cluster',
      'dist/main.js',
      productEnv(
        { dbName: ctx.dbName, queuePrefix: ctx.queuePrefix },
        {
          LOG_LEVEL: ctx.logLevel,
          PORT: String(port),
          WORKER_ENABLED: 'false',
          MIGRATIONS_RUN: 'false',
          RATE_LIMIT_PER_MINUTE: '1000000',
          RATE_LIMIT_PER_IP_PER_MINUTE: '0',
          ...(ctx.nodeOptions ? { NODE_OPTIONS: ctx.nodeOptions } : {}),
          ...clusterEnv,
        },
      ),
    );
    try {
      const apiUrl = `http://127.0.0.1:${port}`;
      await waitForHttp(api, `${apiUrl}/healthz`);
      const onCluster = enginePhases({ ...ctx, apiUrl });
      const cluster = await onCluster.instantHosts('cluster', settings.instantHosts, clusterEnv);
      return {
        shards: settings.clusterShards,
        single,
        cluster,
        ratio: single.perSec ? round(cluster.perSec / single.perSec, 3) : null,
        keysByMaster: await keysByMaster(settings.clusterNodes, ctx.queuePrefix),
        busyBefore: single.busyBefore,
      };
    } finally {
      await stopProcess(api);
    }
  }

  /**
   * The run's keys under `<queuePrefix>:` by kind (host: a host's admission state; hosts: their registry;
   * rewake: the hosts made due while drained; wakes: the wake queue's keys, BullMQ's; other: by their first
   * name, the scheduled jobs' queue and the api's), with their MEMORY USAGE (every element counted), and
   * Redis's used_memory. The host keys of `destinations` (when given) with their TTLs; others only counted.
   */
  async function redisKeys(destinations = null) {
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    const base = `${ctx.queuePrefix}:`;
    const seen = new Set();
    const kinds = {};
    const hostKeys = { keys: 0, bytes: 0, withoutTtl: 0, pttlMaxMs: null, pttlMinMs: null, otherHostsKeys: 0 };
    // Other keys by their first name after the prefix (the scheduled jobs' queue, the api's counters).
    const kindOf = (rest) => {
      if (rest.startsWith('host:')) return 'host';
      if (rest === 'hosts' || rest === 'rewake') return rest;
      if (rest.startsWith('deliveries:')) return 'wakes';
      return `other (${rest.split(':')[0]})`;
    };
    try {
      let cursor = '0';
      do {
        const [next, found] = await redis.scan(cursor, 'MATCH', `${base}*`, 'COUNT', 1000);
        cursor = next;
        const fresh = found.filter((key) => !seen.has(key));
        for (const key of fresh) seen.add(key);
        if (fresh.length === 0) continue;
        const pipeline = redis.pipeline();
        for (const key of fresh) pipeline.call('MEMORY', 'USAGE', key, 'SAMPLES', '0').pttl(key);
        const answers = await pipeline.exec();
        fresh.forEach((key, i) => {
          const [, bytes] = answers[2 * i];
          const [, pttl] = answers[2 * i + 1];
          if (pttl === -2 || bytes === null) return; // gone meanwhile
          const kind = kindOf(key.slice(base.length));
          const entry = (kinds[kind] ??= { keys: 0, bytes: 0 });
          entry.keys += 1;
          entry.bytes += Number(bytes);
          if (kind !== 'host' || !destinations) return;
          if (!destinations.has(key.slice(`${base}host:`.length))) {
            hostKeys.otherHostsKeys += 1;
            return;
          }
          hostKeys.keys += 1;
          hostKeys.bytes += Number(bytes);
          if (pttl === -1) hostKeys.withoutTtl += 1;
          else {
            hostKeys.pttlMaxMs = Math.max(hostKeys.pttlMaxMs ?? 0, pttl);
            hostKeys.pttlMinMs = Math.min(hostKeys.pttlMinMs ?? Infinity, pttl);
          }
        });
      } while (cursor !== '0');
      const usedMemory = Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1] ?? NaN);
      const all = Object.values(kinds);
      // The schedule's own keys (DESIGN 5): the wake queue and the hosts' state, not the other keys.
      const schedule = Object.entries(kinds).filter(([kind]) => !kind.startsWith('other'));
      return {
        keys: all.reduce((n, k) => n + k.keys, 0),
        bytes: all.reduce((n, k) => n + k.bytes, 0),
        scheduleBytes: schedule.reduce((n, [, k]) => n + k.bytes, 0),
        kinds,
        usedMemory,
        ...(destinations ? { hostKeys } : {}),
      };
    } finally {
      redis.disconnect();
    }
  }

  /**
   * thousandHosts receivers answering at once, thousandWebhooksPerHost webhooks at each, spread over
   * workspaces of webhooksPerWorkspace (each workspace's webhooks at as many hosts, each host's from
   * several workspaces), one calculator per workspace bound to all its webhooks. With `entry` (the floor
   * worker), host-thousand-floor: the same load sent with no queue and no admission.
   */
  async function hostThousand(name = 'host-thousand', entry = undefined) {
    const s = settings;
    const hosts = s.thousandHosts;
    const total = hosts * s.thousandWebhooksPerHost;
    const workspaces = Math.ceil(total / s.webhooksPerWorkspace);
    const perWorkspace = Math.max(1, Math.round(s.thousandDeliveries / total));
    const receivers = new ReceiverGroup(hosts);
    let destinations;
    // Open files of the bench (the receivers' side) and of the worker, sampled each second.
    const files = { limitBench: openFiles().limit, limitWorker: null, peakBench: 0, peakWorker: 0 };
    let filesTimer;
    const sampleFiles = (pid) => {
      files.peakBench = Math.max(files.peakBench, openFiles().open ?? 0);
      files.peakWorker = Math.max(files.peakWorker, openFiles(pid).open ?? 0);
    };
    const r = await drainAtHosts(
      name,
      receivers,
      async (urls) => {
        destinations = new Set(urls.map((url) => new URL(url).host));
        log(`${name}: ${hosts} receivers; ${workspaces} workspaces (SQL) of ${s.webhooksPerWorkspace} webhooks (API)`);
        const inserted = await insertWorkspaces(
          db,
          Array.from({ length: workspaces }, (_, w) => `bench-${name}-${w}`),
        );
        const created = await mapLimit(inserted, 8, async (ws, w) => {
          const count = Math.min(s.webhooksPerWorkspace, total - w * s.webhooksPerWorkspace);
          const at = Array.from({ length: count }, (_, j) => urls[(w * s.webhooksPerWorkspace + j) % hosts]);
          return { ...ws, webhooks: await createWebhooks(ws.apiKey, ws.calculator, `bench-${name}-${w}`, at) };
        });
        return {
          webhooks: created.flatMap((ws) => ws.webhooks),
          submitAll: async () => {
            log(`${name}: ${perWorkspace} submissions x ${total} webhooks, no worker running`);
            await mapLimit(created, 8, (ws) => submit(ws, perWorkspace, 2));
          },
        };
      },
      {
        maxSec: s.thousandMaxSec,
        entry,
        started: (worker) => {
          files.limitWorker = openFiles(worker.pid).limit;
          filesTimer = setInterval(() => sampleFiles(worker.pid), 1000);
        },
        ended: async (worker) => {
          clearInterval(filesTimer);
          sampleFiles(worker.pid);
          return redisKeys(destinations);
        },
        stopped: () => redisKeys(destinations),
      },
    ).finally(() => clearInterval(filesTimer));
    return {
      hosts,
      webhooksPerHost: s.thousandWebhooksPerHost,
      workspaces,
      deliveries: r.expected,
      complete: r.done,
      pending: r.pending,
      seconds: round(r.seconds, 2),
      perSec: round((r.expected - r.pending) / r.seconds),
      duplicates: r.receivers.duplicates,
      requestsPerHost: { min: Math.min(...r.receivers.perServer), max: Math.max(...r.receivers.perServer) },
      maxOpenAtOneHost: r.receivers.maxOpen,
      statusCounts: r.statusCounts,
      /** The run's Redis keys (and its hosts' admission state) once every delivery ended (worker up), and after it stopped. */
      redisKeys: { afterRun: r.atEnd, afterWorkerStop: r.afterStop },
      openFiles: files,
      // The floor's process is no worker of the product's.
      workerPeakRssMb: entry ? null : r.workerPeakRssMb,
      cpuMsPerDelivery: r.cpuMsPerDelivery,
      busyBefore: r.busyBefore,
    };
  }

  /** `count` GET /metrics of `url`, one after another: each one's time to the whole body, and its size. */
  async function scrapes(url, count) {
    const times = [];
    let bytes = null;
    for (let i = 0; i < count; i += 1) {
      const started = performance.now();
      const response = await request(url);
      const body = await response.body.text();
      if (response.statusCode !== 200) throw new Error(`GET ${url}: ${response.statusCode}`);
      times.push(performance.now() - started);
      bytes = body.length;
    }
    return { ms: percentiles(times), bytes };
  }

  /**
   * A host that is down (a port nothing listens on: every connection refused) with hostWebhooks webhooks
   * at it, and one worker at the defaults. Redis's keys under the run's prefix and the api's and the
   * worker's /metrics scrapes with no backlog; then backlogDeliveries submitted through the api, and the
   * same once each has been attempted (refused) at least once and waits for its retry, every one pending.
   */
  async function redisBacklog() {
    const s = settings;
    const url = `http://127.0.0.1:${await freePort()}`;
    let worker;
    try {
      const ws = await workspaceWithWebhooks('bench-backlog', Array(s.hostWebhooks).fill(url));
      const host = new URL(url).host;
      await ctx.clearBacklog();
      const busyBefore = await machineBusy();
      worker = await startWorker('worker-redis-backlog');
      await sleep(1000);
      const at = async (label) => {
        const keys = await redisKeys(new Set([host]));
        const api = await scrapes(ctx.apiMetricsUrl, s.backlogScrapes);
        const workerScrapes = await scrapes(worker.metricsUrl, s.backlogScrapes);
        const pending = await deliveriesOf(ws.webhooks, 'pending');
        log(
          `redis-backlog: ${label}: ${pending} pending, ${keys.keys} keys, ${keys.bytes} bytes; /metrics p50 ${api.ms.p50} ms`,
        );
        return { pending, keys, scrapes: { api, worker: workerScrapes } };
      };
      const before = await at('no backlog');
      const submissions = Math.ceil(s.backlogDeliveries / s.hostWebhooks);
      log(`redis-backlog: ${submissions} submissions x ${s.hostWebhooks} webhooks at ${host}, refusing connections`);
      await submit(ws, submissions);
      const expected = await deliveriesOf(ws.webhooks);
      // The largest the run's keys got while the worker went through the backlog.
      let peakBytes = 0;
      let peakKeys = 0;
      const everyOneAttempted = await waitUntil(
        async () => {
          const keys = await redisKeys();
          peakBytes = Math.max(peakBytes, keys.bytes);
          peakKeys = Math.max(peakKeys, keys.keys);
          const { rows } = await db.query(
            `SELECT count(*) FILTER (WHERE attempt_count >= 1)::int AS n FROM deliveries WHERE webhook_id = ANY($1::varchar[])`,
            [ws.webhooks],
          );
          if (rows[0].n >= expected) return true;
          await sleep(1000); // a look a second is plenty: the backlog takes a minute or more
          return false;
        },
        s.backlogMaxSec * 1000,
        [worker],
      );
      const after = await at('backlog');
      const [{ attempts, attempted }] = (
        await db.query(
          `SELECT coalesce(sum(attempt_count), 0)::int AS attempts, count(*) FILTER (WHERE attempt_count >= 1)::int AS attempted
           FROM deliveries WHERE webhook_id = ANY($1::varchar[])`,
          [ws.webhooks],
        )
      ).rows;
      // The host's admission state as the worker left it (its limit, and the breaker: open_until).
      const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
      const hostState = await redis.hgetall(`${ctx.queuePrefix}:host:${host}`).finally(() => redis.disconnect());
      const result = {
        host,
        down: 'connection refused (no listener on the port)',
        webhooks: s.hostWebhooks,
        deliveries: expected,
        everyOneAttempted,
        maxSec: s.backlogMaxSec,
        attempted,
        attempts,
        hostState,
        before,
        after,
        peak: { keys: peakKeys, bytes: peakBytes },
        bytesPerPending:
          after.pending > 0 ? round((after.keys.scheduleBytes - before.keys.scheduleBytes) / after.pending, 2) : null,
        allKeysBytesPerPending:
          after.pending > 0 ? round((after.keys.bytes - before.keys.bytes) / after.pending, 2) : null,
        usedMemoryPerPending:
          after.pending > 0 ? round((after.keys.usedMemory - before.keys.usedMemory) / after.pending, 2) : null,
        statusCounts: await statusCounts(ws.webhooks),
        busyBefore,
      };
      result.workerPeakRssMb = round(await stopProcess(worker));
      return result;
    } finally {
      if (worker) await stopProcess(worker);
    }
  }

  const phases = {
    'delivery-slow': deliverySlow,
    'delete-hanging': deleteHanging,
    isolation,
    'host-slow': () => hostSlow(),
    'host-slow-floor': () => hostSlow(true),
    'host-overload': hostOverload,
    'host-fairness': hostFairness,
    'host-proportional': hostProportional,
    'instant-one-host': () => instantHosts('instant-one-host', 1),
    'instant-ten-hosts': () => instantHosts('instant-ten-hosts', settings.instantHosts),
    'instant-floor': () => instantHosts('instant-floor', 1, {}, 'bench/floor-worker.mjs'),
    'instant-floor-ten': () => instantHosts('instant-floor-ten', settings.instantHosts, {}, 'bench/floor-worker.mjs'),
    'host-thousand': () => hostThousand(),
    'host-thousand-floor': () => hostThousand('host-thousand-floor', 'bench/floor-worker.mjs'),
    'redis-backlog': redisBacklog,
    cluster: clusterPhase,
    search: async () => ({ busyBefore: await machineBusy(), ...(await searchPhase(ctx)) }),
  };
  return { settings, run: (key) => phases[key](), instantHosts, idleWorkerRss };
}

/** Runs the engine phases `runs(key)` selects into `results.engine`, each preceded by its busy reading. */
export async function runEnginePhases(ctx, runs, results) {
  const keys = ENGINE_PHASE_KEYS.filter(runs);
  if (keys.length === 0) return;
  const engine = enginePhases(ctx);
  results.engine = { settings: engine.settings };
  for (const key of keys) {
    ctx.sampler.phase = key;
    const result = await engine.run(key);
    results.machine.busyBefore[key] = result.busyBefore;
    results.engine[key] = result;
  }
  const idle = engine.idleWorkerRss.filter((mb) => mb !== null);
  if (idle.length) results.engine.idleWorkerRssMb = round(Math.min(...idle));
}

// ---------------------------------------------------------------------------------------------- report

const fmt = (n, digits = 0) =>
  n === null || n === undefined || Number.isNaN(n)
    ? 'n/a'
    : n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

// The phases whose receivers all answer 2xx in the end (host-overload's after its 503s): none may end unsucceeded.
const LOSSLESS = [
  'delivery-slow',
  'host-slow',
  'host-overload',
  'host-fairness',
  'host-proportional',
  'instant-one-host',
  'instant-ten-hosts',
  'host-thousand',
];
const notSucceeded = (r) =>
  [r.statusCounts, r.statusCountsA, r.statusCountsB]
    .flatMap((counts) => Object.entries(counts ?? {}))
    .filter(([status]) => status !== 'succeeded')
    .reduce((n, [, k]) => n + k, 0);

/** The engine phases' rows of the targets table (same shape as report.mjs's). */
export function engineTargets(results) {
  const e = results.engine ?? {};
  const targets = [];
  const add = (target, check) => {
    const measured = target.value !== null && target.value !== undefined;
    const pass = target.invalid ? false : measured ? check(target.value) : null;
    targets.push({ ceiling: null, ratio: null, invalid: null, ...target, pass });
  };
  const slow = e['delivery-slow'];
  const pool = slow?.databasePoolSize ?? e.settings?.databasePoolSize ?? DEFAULT_POOL_SIZE;
  const sampling = slow && slow.postgres.samples === 0 ? 'pg_stat_activity never sampled' : null;
  add(
    {
      name: `deliveries/s, ${slow?.receivers ?? 20} receivers answering after ${slow?.receiverDelayMs ?? 250} ms, one worker (defaults)`,
      value: slow?.perSec,
      target: '>= 1,000/s',
    },
    (v) => v >= 1000,
  );
  add(
    {
      name: "worker's Postgres connections (max), slow receivers",
      value: slow?.postgres.maxWorkerConnections,
      invalid: sampling,
      target: `<= DATABASE_POOL_SIZE (${pool}${slow?.databasePoolSizeSource === 'default' ? ', default' : ''})`,
    },
    (v) => v <= pool,
  );
  add(
    {
      name: 'backends idle in transaction (max), slow receivers',
      value: slow?.postgres.maxIdleInTransaction,
      invalid: sampling,
      target: '0',
    },
    (v) => v === 0,
  );
  const del = e['delete-hanging'];
  for (const [mode, label] of [
    ['sequential', 'one after another'],
    ['concurrent', 'concurrent burst'],
  ]) {
    const r = del?.[mode];
    const problems = [
      r && r.arrived < r.webhooks ? `only ${r.arrived} of ${r.webhooks} attempts were hanging` : null,
      r && r.failed > 0 ? `${r.failed} DELETEs not 2xx` : null,
    ].filter(Boolean);
    add(
      {
        name: `DELETE webhook p99 with its attempt hanging, ${r?.webhooks ?? 50} webhooks ${label}`,
        value: r?.deleteMs.p99,
        invalid: problems.length ? problems.join(', ') : null,
        target: '< 200 ms',
      },
      (v) => v < 200,
    );
  }
  const iso = e.isolation;
  const missing = iso ? iso.submissionsB - iso.received : 0;
  add(
    {
      name: "workspace B's submission-to-receipt max while A's receivers hang",
      // A delivery that never arrived took at least until the end of the wait: the max is at least that.
      value: iso ? Math.max(iso.receiptMs.max ?? 0, iso.missingAtLeastMs ?? 0) || null : null,
      invalid:
        missing > 0 ? `${missing} of ${iso.submissionsB} not received within ${fmt(iso.waitedAfterLastSec)} s` : null,
      target: '< 1,000 ms',
    },
    (v) => v < 1000,
  );
  // A ratio to a ceiling measured in the same run: pass or fail only when both were measured.
  const ratioTarget = ({ name, r, ceiling, min, invalid = null }) => {
    const ratio = r?.perSec && ceiling ? r.perSec / ceiling : null;
    add(
      {
        name,
        value: r?.perSec,
        ceiling,
        ratio,
        invalid: r && !r.complete ? 'not every delivery ended within the phase' : invalid,
        target: `>= ${(100 * min).toFixed(1)}% of ceiling`,
      },
      () => (ratio === null ? null : ratio >= min),
    );
  };
  const hostSlow = e['host-slow'];
  const slowFloor = e['host-slow-floor'];
  ratioTarget({
    name: `deliveries/s, ${hostSlow?.webhooks ?? 20} webhooks at one host answering after ${hostSlow?.receiverDelayMs ?? 250} ms, one worker (defaults; ceiling: host-slow-floor, ${slowFloor?.concurrency ?? 400} at once)`,
    r: hostSlow,
    ceiling: slowFloor?.complete ? slowFloor.perSec : null,
    min: 0.9,
  });
  const overload = e['host-overload'];
  const overloadLost = overload ? notSucceeded(overload) : 0;
  add(
    {
      name: `share of attempts answered 503 after the first 5 s, one host answering 503 above ${overload?.overloadAbove ?? 30} open`,
      value: overload?.percent503After5s,
      invalid: overloadLost > 0 ? `${overloadLost} of ${overload.deliveries} deliveries did not succeed` : null,
      target: '< 10 (%), all succeeded',
    },
    (v) => v < 10,
  );
  const fair = e['host-fairness'];
  const fairMissing = fair ? fair.submissionsB - fair.received : 0;
  add(
    {
      name: `workspace B's submission-to-receipt max behind A's burst of ${fmt(fair?.deliveriesA ?? 2000)} at that host (${fair?.receiverDelayMs ?? 250} ms answers)`,
      value: fair ? Math.max(fair.receiptMs.max ?? 0, fair.missingAtLeastMs ?? 0) || null : null,
      invalid: fairMissing > 0 ? `${fairMissing} of ${fair.submissionsB} not received within the phase` : null,
      target: '< 600 ms',
    },
    (v) => v < 600,
  );
  const prop = e['host-proportional'];
  add(
    {
      name: `requests open at a host answering in ${prop?.receiverDelayMs ?? 250} ms x (1 + open / ${prop?.slowsPer ?? 25}), median after the first ${prop?.skipSec ?? 10} s`,
      value: prop?.medianOpenAfterSkip,
      target: '<= 60',
    },
    (v) => v <= 60,
  );
  // Each against the floor at the same receivers: ten hosts' own work (more sockets, more webhooks per claim)
  // is not one host's.
  for (const [key, where, floorKey] of [
    ['instant-one-host', 'one host', 'instant-floor'],
    ['instant-ten-hosts', 'ten hosts', 'instant-floor-ten'],
  ]) {
    const r = e[key];
    const floor = e[floorKey];
    ratioTarget({
      name: `deliveries/s, ${r?.webhooks ?? 20} webhooks at ${where} answering at once, one worker (defaults; ceiling: ${floorKey})`,
      r,
      ceiling: floor?.complete ? floor.perSec : null,
      min: 0.85,
    });
  }
  const thousand = e['host-thousand'];
  // Against ten hosts (the issue's row) and, beside it, the physical limit of its own work: the floor at the
  // same 1,000 receivers and 10,000 webhooks, whose connections and health rows ten hosts' 20 never pay. The
  // first row names the two floors' own ratio: near the most it can reach.
  const floors = [e['host-thousand-floor'], e['instant-floor-ten']];
  const floorsRatio = floors.every((r) => r?.complete) ? floors[0].perSec / floors[1].perSec : null;
  for (const ceilingKey of ['instant-ten-hosts', 'host-thousand-floor']) {
    const ceiling = e[ceilingKey];
    const bound =
      ceilingKey === 'instant-ten-hosts' && floorsRatio !== null
        ? `; host-thousand-floor against instant-floor-ten: ${fmt(floorsRatio * 100, 1)}%`
        : '';
    ratioTarget({
      name: `deliveries/s, ${fmt(thousand?.hosts ?? 1000)} hosts x ${thousand?.webhooksPerHost ?? 10} webhooks answering at once, one worker (ceiling: ${ceilingKey}${bound})`,
      r: thousand,
      ceiling: ceiling?.complete ? ceiling.perSec : null,
      min: 0.85,
    });
  }
  const backlog = e['redis-backlog'];
  const backlogProblem = (r) =>
    r && r.after.pending < r.deliveries
      ? `${fmt(r.deliveries - r.after.pending)} of ${fmt(r.deliveries)} no longer pending`
      : null;
  add(
    {
      name: `Redis bytes per pending delivery (MEMORY USAGE of the schedule's keys; all the run's keys: ${fmt(backlog?.allKeysBytesPerPending, 1)}), ${fmt(backlog?.deliveries ?? 30_000)} pending at a host refusing connections`,
      value: backlog?.bytesPerPending,
      invalid: backlogProblem(backlog),
      target: '<= 16',
    },
    (v) => v <= 16,
  );
  const scrape = backlog?.after.scrapes.api.ms;
  const idleScrape = backlog?.before.scrapes.api.ms;
  // Flat: the backlog may not make the median scrape slower by more than half again (plus 5 ms of noise).
  const flat = scrape && idleScrape ? scrape.p50 <= idleScrape.p50 * 1.5 + 5 : null;
  add(
    {
      name: `api GET /metrics max of ${backlog?.after.scrapes.api.ms ? 10 : 'n'} scrapes beside that backlog (p50 ${fmt(scrape?.p50, 1)} ms; with no backlog ${fmt(idleScrape?.p50, 1)} ms)`,
      value: scrape?.max,
      invalid: backlogProblem(backlog) ?? (flat === false ? 'p50 not flat in the backlog' : null),
      target: '< 100 ms, flat in the backlog',
    },
    (v) => v < 100,
  );
  const search = e.search;
  const slowest = search ? Math.max(...Object.values(search.kinds).map((k) => k.p99)) : null;
  add(
    {
      name: `delivery search p99 (the slowest kind), ${fmt(search?.deliveries ?? 10_000_000)} deliveries in the table`,
      value: slowest === null ? null : round(slowest, 1),
      target: '< 100 ms',
    },
    (v) => v < 100,
  );
  const keys = thousand?.redisKeys;
  add(
    {
      name: `host-thousand's host admission state (<queuePrefix>:host:*) without a TTL, after the run and after the worker stopped`,
      value: keys
        ? Math.max(keys.afterRun?.hostKeys.withoutTtl ?? 0, keys.afterWorkerStop?.hostKeys.withoutTtl ?? 0)
        : null,
      target: '0',
    },
    (v) => v === 0,
  );
  // Every delivery of a phase whose receivers all answer 2xx in the end must have succeeded.
  const lost = LOSSLESS.filter((key) => e[key]).map((key) => [key, notSucceeded(e[key])]);
  const capped = lost.filter(([key]) => e[key].complete === false).map(([key]) => key);
  add(
    {
      name: `deliveries not succeeded at the end (${lost.map(([key]) => key).join(', ') || 'phases whose receivers answer 2xx'})`,
      value: lost.length ? lost.reduce((n, [, k]) => n + k, 0) : null,
      invalid: capped.length ? `time cap reached in ${capped.join(', ')}` : null,
      target: '0',
    },
    (v) => v === 0,
  );
  const rss = ENGINE_PHASE_KEYS.filter((key) => e[key]?.workerPeakRssMb).map((key) => [key, e[key].workerPeakRssMb]);
  const [rssKey, rssMb] = rss.reduce((max, entry) => (entry[1] > max[1] ? entry : max), [null, null]);
  add(
    {
      name: `worker peak RSS (VmHWM), the engine phases' workers${rssKey ? ` (largest in ${rssKey})` : ''}${e.idleWorkerRssMb ? `; a worker before its first delivery: ${fmt(e.idleWorkerRssMb)} MB` : ''}`,
      value: rssMb,
      target: '< 200 MB',
    },
    (v) => v < 200,
  );
  return targets;
}

const percentileRow = (label, p, count) =>
  `| ${label} | ${fmt(p.p50, 1)} | ${fmt(p.p99, 1)} | ${fmt(p.max, 1)} | ${count} |`;

function slowSection(r) {
  if (!r) return 'Not measured in this run.';
  const pg = r.postgres;
  const cpu = r.cpuMsPerDelivery;
  const states = Object.entries(pg.workerStatesAtMax ?? {})
    .map(([state, k]) => `${k} ${state}`)
    .join(', ');
  return [
    `${fmt(r.deliveries)} deliveries (${fmt(r.submissions)} submissions to one calculator bound to ${r.receivers} webhooks,`,
    `one per receiver) are created with no worker running; then one worker process starts with the`,
    `service's defaults. Each receiver listens on its own port (a destination of its own) and answers 200`,
    `${r.receiverDelayMs} ms after a request has arrived. Throughput is deliveries divided by the time from the first`,
    'receipt to the moment none of them is pending. Meanwhile `pg_stat_activity` of the bench database is',
    `sampled every ${pg.intervalMs} ms (${fmt(pg.samples)} samples, ${fmt(pg.samplesPerSec, 1)}/s, slowest ${pg.slowestSampleMs} ms)`,
    "on a connection of the bench's own, left out of every count. The worker's connections are the",
    "backends whose `client_port` is the local port of one of the worker process's TCP connections to",
    'Postgres (its socket inodes in /proc/<pid>/fd matched in /proc/<pid>/net/tcp, what `ss -tnp` shows),',
    "so they are counted however the worker names or pools them. CPU is the worker's and the bench",
    "database's backends' (the sampler's excluded) from the first receipt on, per delivery.",
    `DATABASE_POOL_SIZE: ${r.databasePoolSize} (${r.databasePoolSizeSource === 'default' ? 'unset: the default' : 'from the environment, passed to the worker'}).`,
    '',
    '| deliveries | delivered | seconds | per second | not succeeded | duplicates | worker connections (max) | idle in transaction (max) | backends (max) | worker CPU ms/delivery | Postgres CPU ms/delivery | Redis CPU ms/delivery |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    `| ${fmt(r.deliveries)} | ${fmt(r.delivered)}${r.complete ? '' : ' (stopped at the time cap)'} | ${fmt(r.seconds, 2)} | ${fmt(r.perSec)} | ${Object.entries(
      r.statusCounts,
    )
      .filter(([s]) => s !== 'succeeded')
      .reduce(
        (sum, [, n]) => sum + n,
        0,
      )} | ${r.duplicates} | ${pg.maxWorkerConnections}${states ? ` (${states})` : ''} | ${pg.maxIdleInTransaction} | ${pg.maxBackends} | ${fmt(cpu.worker, 3)} | ${fmt(cpu.postgres, 3)} | ${fmt(cpu.redis, 3)} |`,
  ].join('\n');
}

function deleteSection(r) {
  if (!r) return 'Not measured in this run.';
  const row = (label, x) =>
    x
      ? `| ${label} | ${x.arrived} of ${x.webhooks} | ${fmt(x.deleteMs.p50, 1)} | ${fmt(x.deleteMs.p99, 1)} | ${fmt(x.deleteMs.max, 1)} | ${fmt(x.totalMs)} | ${Object.entries(
          x.statuses,
        )
          .map(([s, k]) => `${k}x ${s}`)
          .join(', ')} |`
      : `| ${label} | not measured | | | | | |`;
  return [
    `Two rounds, one worker process with the service's defaults (DELIVERY_TIMEOUT_MS ${fmt(r.deliveryTimeoutMs)}). Each round`,
    `creates ${r.sequential?.webhooks ?? r.concurrent?.webhooks} webhooks, each to a dead receiver of its own (a server on its own port that accepts`,
    'the connection and reads the request but never answers), bound to one calculator, and sends one',
    'submission. Once every request has arrived at the dead receivers, each of those webhooks is DELETEd:',
    'one after another in the first round, all at once (on warmed keep-alive connections) in the second.',
    'Latency is that of the DELETE as the client sees it. The dead receivers then close their connections.',
    '',
    '| round | attempts hanging | p50 ms | p99 ms | max ms | all DELETEs ms | answers |',
    '|---|---:|---:|---:|---:|---:|---|',
    row('one after another', r.sequential),
    row('concurrent burst', r.concurrent),
  ].join('\n');
}

/** The isolation and host-fairness tables' row: B's submission-to-receipt times. */
const bReceiptRow = (r) =>
  percentileRow(
    "B's submission sent -> webhook received",
    r.receiptMs,
    `${r.received} of ${r.submissionsB} arrived${r.bFailedSubmissions ? ` (${r.bFailedSubmissions} submissions failed)` : ''}`,
  );

function isolationSection(r) {
  if (!r) return 'Not measured in this run.';
  return [
    `One worker process with the service's defaults. Workspace A has ${r.deadReceivers} webhooks, each to a dead receiver on a`,
    `port of its own, bound to one calculator; ${r.submissionsA} submissions to it make ${fmt(r.deliveriesA)} deliveries. Once the`,
    `dead receivers stop getting new requests (${r.aRequestsInFlightWhenBStarted} hanging), workspace B, whose one webhook's receiver`,
    `answers 200 at once, gets ${r.submissionsB} submissions spaced over ${r.bSpreadSec} s; each B delivery's time runs from its`,
    "submission's send to its receipt (the receiver's clock is the client's). Deliveries not arrived",
    `${fmt(r.waitedAfterLastSec)} s after B's last submission count as missing; a missing one took at least the time to that moment.`,
    '',
    '| figure | p50 ms | p99 ms | max ms | count |',
    '|---|---:|---:|---:|---:|',
    bReceiptRow(r),
    '',
    `Missing deliveries waited at least ${r.missingAtLeastMs === null ? '-' : `${fmt(r.missingAtLeastMs)} ms`}. Requests at A's dead receivers: ${r.aRequestsInFlightWhenBStarted} when B started, ${r.aRequestsAtEnd} at the end.`,
  ].join('\n');
}

function hostSection(slow, floor, overload) {
  if (!slow && !overload) return 'Not measured in this run.';
  const row = (label, r) =>
    r
      ? `| ${label} | ${fmt(r.deliveries)} | ${fmt(r.seconds, 1)} | ${fmt(r.perSec)}${r.complete ? '' : ' (time cap)'} | ${r.maxOpen} | ${fmt(r.medianOpenAfter5s)} | ${r.percent503After5s === undefined ? '-' : `${fmt(r.percent503After5s, 1)} %`} | ${statuses(r.statusCounts)} |`
      : `| ${label} | not measured | | | | | | |`;
  return [
    `${slow?.webhooks ?? overload?.webhooks} webhooks of one workspace point at one receiver port (one host); the deliveries are`,
    'created with no worker running, then one worker process starts with the defaults (host-overload: with',
    `a retry schedule of ${overload?.retrySchedule?.split(',').length ?? 15} x 1 s). host-slow's receiver answers 200 after ${slow?.receiverDelayMs ?? 250} ms; host-overload's answers`,
    `503 to a request that finds more than ${overload?.overloadAbove ?? 30} open, else 200 after the same delay. host-slow-floor is`,
    `host-slow's load attempted by bench/floor-worker.mjs (as instant-floor below) ${fmt(floor?.concurrency ?? 400)} at once: as many as the`,
    "webhooks' caps allow (20 webhooks x DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK's default 20), with no queue, no",
    "host limit and no drain: host-slow's ceiling. Open counts are the receiver's, at each request's arrival,",
    'from 5 s after the first one.',
    '',
    '| phase | deliveries | seconds | per second | open (max) | open after 5 s (median) | 503 after 5 s | statuses |',
    '|---|---:|---:|---:|---:|---:|---:|---|',
    row('host-slow', slow),
    row('host-slow-floor', floor),
    row('host-overload', overload),
    '',
    `host-slow / host-slow-floor: ${slow?.perSec && floor?.perSec ? `${((100 * slow.perSec) / floor.perSec).toFixed(1)}%` : 'n/a'}.`,
  ].join('\n');
}

const statuses = (counts) =>
  Object.entries(counts ?? {})
    .map(([s, n]) => `${fmt(n)} ${s}`)
    .join(', ');

function fairnessSection(r) {
  if (!r) return 'Not measured in this run.';
  const missing = r.submissionsB - r.received;
  return [
    `Workspace A has ${r.webhooksA} webhooks at one receiver port (one host) answering 200 after ${r.receiverDelayMs} ms; its`,
    `${fmt(r.deliveriesA)} deliveries are created with no worker running, then one worker starts with the defaults. At the`,
    `first receipt (${fmt(r.aPendingWhenBStarted)} of A's still pending), workspace B, whose one webhook is at the same host:port`,
    `(another path), gets ${r.submissionsB} submissions spaced over ${fmt(r.bSpreadSec, 2)} s. B's deliveries are told apart at the receiver`,
    "by the payload's webhookId; each one's time runs from its submission's send to its receipt (the body",
    'arrived, before the answer).',
    '',
    '| figure | p50 ms | p99 ms | max ms | count |',
    '|---|---:|---:|---:|---:|',
    bReceiptRow(r),
    '',
    [
      missing > 0
        ? `${missing} of B's deliveries never arrived; one waited at least ${fmt(r.missingAtLeastMs)} ms.`
        : null,
      `A: ${fmt(r.aPerSec)} deliveries/s over ${fmt(r.seconds, 1)} s from the first receipt`,
      r.complete ? 'to none pending;' : `(${fmt(r.pendingAtEnd)} still pending at the time cap);`,
      `open at the host (max) ${r.maxOpen}; statuses: A ${statuses(r.statusCountsA)}, B ${statuses(r.statusCountsB)}.`,
    ]
      .filter(Boolean)
      .join(' '),
  ].join('\n');
}

function proportionalSection(r) {
  if (!r) return 'Not measured in this run.';
  return [
    `${r.webhooks} webhooks at one receiver port; the receiver answers 200 after ${r.receiverDelayMs} ms x (1 + open / ${r.slowsPer}), open being`,
    'the requests open at it when the request arrived (itself included): a host whose answers slow with its',
    `load, so that more requests at once buy little throughput (at most ${fmt((1000 * r.slowsPer) / r.receiverDelayMs)}/s) and much latency. The deliveries are`,
    `created with no worker running; open counts are the receiver's at each arrival from ${r.skipSec} s after the first.`,
    '',
    '| deliveries | seconds | per second | open (max) | open after the first 10 s (median) | statuses |',
    '|---:|---:|---:|---:|---:|---|',
    `| ${fmt(r.deliveries)}${r.complete ? '' : ' (not all ended at the time cap)'} | ${fmt(r.seconds, 1)} | ${fmt(r.perSec)} | ${r.maxOpen} | ${fmt(r.medianOpenAfterSkip)} | ${statuses(r.statusCounts)} |`,
  ].join('\n');
}

/** A row of a CPU-per-delivery table (ms by process, and their sum). */
function cpuRow(label, c) {
  const ms = (v) => (v === null || v === undefined ? 'n/a' : v.toFixed(3));
  return c
    ? `| ${label} | ${ms(c.worker)} | ${ms(c.postgres)} | ${ms(c.redis)} | ${ms(c.bench)} | ${ms(['worker', 'postgres', 'redis', 'bench'].reduce((sum, k) => sum + (c[k] ?? 0), 0))} |`
    : `| ${label} | not measured | | | | |`;
}

function instantSection(one, ten, floor, floorTen) {
  if (!one && !ten) return 'Not measured in this run.';
  const row = (label, r, ceiling) =>
    r
      ? `| ${label} | ${r.hosts} | ${fmt(r.deliveries)} | ${fmt(r.seconds, 2)} | ${fmt(r.perSec)}${r.complete ? '' : ' (time cap)'} | ${ceiling?.perSec ? `${((100 * r.perSec) / ceiling.perSec).toFixed(1)}%` : 'n/a'} | ${fmt(r.requestsPerHost.min)}-${fmt(r.requestsPerHost.max)} | ${statuses(r.statusCounts)} |`
      : `| ${label} | not measured | | | | | | |`;
  return [
    `${one?.webhooks ?? ten?.webhooks} webhooks of one workspace, at one receiver port (instant-one-host) or spread evenly over ten`,
    '(instant-ten-hosts); the receivers answer 200 at once. The deliveries are created with no worker running,',
    'then one worker starts with the defaults; the rate runs from the first receipt to none pending. The ratio',
    "is to the floor at the same receivers: instant-floor (instant-ten-hosts': instant-floor-ten) is that load",
    "attempted by bench/floor-worker.mjs: the worker's own attempt (connect, claim, sign, send, record, log)",
    'for every due delivery, read by one plain query, WORKER_CONCURRENCY at a time, with no queue, no wake,',
    'no drain and no admission. It is not a way to deliver (no retries, no fairness, no host limit, no',
    "webhook cap): it is the physical limit of the deliveries' own work.",
    '',
    '| phase | hosts | deliveries | seconds | per second | ratio to its floor | requests per host (min-max) | statuses |',
    '|---|---:|---:|---:|---:|---:|---|---|',
    row('instant-one-host', one, floor),
    row('instant-ten-hosts', ten, floorTen),
    row('instant-floor', floor, floor),
    row('instant-floor-ten', floorTen, floorTen),
    '',
    'CPU time per delivery (ms, read from /proc from the first request until none is pending, over the deliveries',
    'received meanwhile; the bench process holds the receivers and polls).',
    '',
    '| phase | worker | postgres | redis | bench (receivers) | all |',
    '|---|---:|---:|---:|---:|---:|',
    cpuRow('instant-one-host', one?.cpuMsPerDelivery),
    cpuRow('instant-ten-hosts', ten?.cpuMsPerDelivery),
    cpuRow('instant-floor', floor?.cpuMsPerDelivery),
    cpuRow('instant-floor-ten', floorTen?.cpuMsPerDelivery),
  ].join('\n');
}

/** A row of the Redis keys tables: the run's keys under its prefix by kind. */
function keysRow(label, k) {
  if (!k) return `| ${label} | not measured | | | |`;
  const kinds = Object.entries(k.kinds)
    .map(([kind, x]) => `${kind} ${fmt(x.keys)} (${fmt(x.bytes / 1024, 1)} KiB)`)
    .join(', ');
  return `| ${label} | ${fmt(k.keys)} | ${fmt(k.bytes / 1024, 1)} KiB | ${kinds} | ${fmt(k.usedMemory / 1024 ** 2, 1)} MiB |`;
}

const KEYS_HEADER = [
  "| when | keys under the run's prefix | MEMORY USAGE | by kind | Redis used_memory (whole server) |",
  '|---|---:|---:|---|---:|',
];

function thousandSection(r, ten, floor) {
  if (!r) return 'Not measured in this run.';
  const hostKeys = (label, k) =>
    k
      ? `| ${label} | ${fmt(k.keys)} | ${fmt(k.bytes / 1024, 1)} KiB | ${fmt(k.withoutTtl)} | ${k.pttlMaxMs === null ? '-' : `${fmt(k.pttlMaxMs / 60_000, 1)} min`} | ${fmt(k.otherHostsKeys)} |`
      : `| ${label} | not measured | | | | |`;
  const tenRate = ten?.perSec ?? null;
  const floorRate = floor?.complete ? floor.perSec : null;
  const ratioTo = (rate) => (r.perSec && rate ? `${((100 * r.perSec) / rate).toFixed(1)}% of ${fmt(rate)}/s` : 'n/a');
  return [
    `${fmt(r.hosts)} receiver ports in the bench process (one host each), answering 200 at once; ${r.webhooksPerHost} webhooks at each,`,
    `in ${r.workspaces} workspaces of up to 100 (the api's MAX_WEBHOOKS_PER_WORKSPACE default), each workspace's webhooks`,
    "at as many hosts and each host's webhooks from several workspaces; one calculator per workspace bound to all",
    'its webhooks (workspaces, keys and calculators inserted by SQL, webhooks made through the API). The',
    'deliveries are created with no worker running, then one worker starts with the defaults.',
    `Open files: limit ${r.openFiles.limitBench} for the bench, ${r.openFiles.limitWorker ?? 'n/a'} for the worker (not raised); at most`,
    `${fmt(r.openFiles.peakBench)} open in the bench and ${fmt(r.openFiles.peakWorker)} in the worker (sampled each second).`,
    '',
    'host-thousand-floor is the same load (its own workspaces and webhooks, made the same way) sent by',
    "bench/floor-worker.mjs, as instant-floor's: claim, sign, POST, record and log each delivery, no queue, no admission.",
    '',
    '| phase | deliveries | seconds | per second | ratio to host-thousand-floor | ratio to instant-ten-hosts | requests per host (min-max) | statuses |',
    '|---|---:|---:|---:|---:|---:|---|---|',
    ...[
      ['host-thousand', r],
      ['host-thousand-floor', floor],
    ]
      .filter(([, x]) => x)
      .map(
        ([key, x]) =>
          `| ${key} | ${fmt(x.deliveries)} | ${fmt(x.seconds, 2)} | ${fmt(x.perSec)}${x.complete ? '' : ` (${fmt(x.pending)} pending at the time cap)`} | ${x === r ? ratioTo(floorRate) : '-'} | ${x === r ? ratioTo(tenRate) : '-'} | ${fmt(x.requestsPerHost.min)}-${fmt(x.requestsPerHost.max)} | ${statuses(x.statusCounts)} |`,
      ),
    '',
    'The admission state of these hosts (`<queuePrefix>:host:<host>`, a hash each), its MEMORY USAGE and TTLs; an',
    'idle one goes when its TTL runs out, so after the longest PTTL only keys without a TTL would remain. Then',
    "every key of the run's prefix by kind (host: those hashes; hosts: their registry; rewake: hosts made due",
    "while drained; wakes: the wake queue's keys, BullMQ's, one job per host with pending work; other: the",
    "api's rate-limit counters and the scheduled jobs' queue).",
    '',
    "| when | host keys | memory | without TTL | longest PTTL | other hosts' keys |",
    '|---|---:|---:|---:|---:|---:|',
    hostKeys('every delivery ended, worker up', r.redisKeys?.afterRun?.hostKeys),
    hostKeys('after the worker stopped', r.redisKeys?.afterWorkerStop?.hostKeys),
    '',
    ...KEYS_HEADER,
    keysRow('every delivery ended, worker up', r.redisKeys?.afterRun),
    keysRow('after the worker stopped', r.redisKeys?.afterWorkerStop),
    '',
    "CPU time per delivery (ms, read from /proc as in the instant receivers' table), beside the floor and instant-ten-hosts:",
    '',
    '| phase | worker | postgres | redis | bench (receivers) | all |',
    '|---|---:|---:|---:|---:|---:|',
    cpuRow('host-thousand', r.cpuMsPerDelivery),
    cpuRow('host-thousand-floor', floor?.cpuMsPerDelivery),
    cpuRow('instant-ten-hosts', ten?.cpuMsPerDelivery),
  ].join('\n');
}

function backlogSection(r) {
  if (!r) return 'Not measured in this run.';
  const scrapeRow = (label, x) =>
    `| ${label} | ${fmt(x.pending)} | ${fmt(x.scrapes.api.ms.p50, 1)} | ${fmt(x.scrapes.api.ms.max, 1)} | ${fmt(x.scrapes.api.bytes / 1024, 1)} KiB | ${fmt(x.scrapes.worker.ms.p50, 1)} | ${fmt(x.scrapes.worker.ms.max, 1)} |`;
  const state = r.hostState ?? {};
  return [
    `${r.webhooks} webhooks of one workspace point at a host that is down: a port on 127.0.0.1 nothing listens on, so`,
    'every connection is refused at once. One worker runs with the defaults throughout. With no backlog, the',
    "run's Redis keys are read (every key under the bench's queue prefix, MEMORY USAGE with every element",
    "counted) and the api's and the worker's GET /metrics timed (ten scrapes each, one after another, to the",
    `whole body); then ${fmt(r.deliveries)} deliveries are made through the api, and once each has been attempted (refused)`,
    `at least once, or after ${fmt(r.maxSec ?? 60)} s, the same again while the worker goes on. Bytes per pending delivery: the`,
    "schedule's keys' MEMORY USAGE (the wake queue's and the hosts' state: all but the others) after less",
    'before, over the deliveries pending then. The others grow with time whatever the backlog: the maintenance',
    "queue keeps its last 1,000 runs of the scheduled jobs; they are in the figure over all the run's keys.",
    "Redis's used_memory is the whole server's, other runs' keys included, so its difference is only indicative.",
    '',
    ...KEYS_HEADER,
    keysRow('no backlog', r.before.keys),
    keysRow(`${fmt(r.after.pending)} pending`, r.after.keys),
    '',
    `Bytes per pending delivery: **${fmt(r.bytesPerPending, 2)}** by the schedule's keys, ${fmt(r.allKeysBytesPerPending, 2)} by all the run's keys (used_memory:`,
    `${fmt(r.usedMemoryPerPending, 1)}). The largest the run's keys`,
    `got while the worker went through the backlog: ${fmt(r.peak.keys)} keys, ${fmt(r.peak.bytes / 1024, 1)} KiB. When measured, ${fmt(r.attempted)} of the`,
    `deliveries had been attempted (${fmt(r.attempts)} attempts in all); the host's state: limit ${state.limit ?? '-'}, last change`,
    `${state.reason || '-'}, breaker ${Number(state.open_until) > 0 ? 'open' : 'closed'}; statuses: ${statuses(r.statusCounts)}.`,
    '',
    '| backlog | pending | api /metrics p50 ms | max ms | body | worker /metrics p50 ms | max ms |',
    '|---|---:|---:|---:|---:|---:|---:|',
    scrapeRow('none', r.before),
    scrapeRow(`${fmt(r.after.pending)} at a host that is down`, r.after),
  ].join('\n');
}

function searchSection(r) {
  if (!r) return 'Not measured in this run.';
  return [
    `One workspace's ${fmt(r.deliveries)} deliveries (${fmt(r.submissions)} submissions to 10 webhooks) inserted by SQL into`,
    'the current partition (88% answered 200, 2% 204, 4% 500, 2% 503, 1.5% 404, 1% 429, 0.5% 410, 1% no answer),',
    `in ${fmt(r.insertSeconds)} s with ANALYZE; then each kind of GET /deliveries search, one request at a time through the`,
    'api, its first page (50) and the next one (the cursor), from request to answer. `BENCH_SEARCH_DELIVERIES`,',
    '`BENCH_SEARCH_REQUESTS` (per kind) override the counts.',
    '',
    '| search | requests | p50 ms | p99 ms | max ms |',
    '|---|---:|---:|---:|---:|',
    ...Object.entries(r.kinds).map(
      ([name, k]) => `| \`${name}\` | ${fmt(k.requests)} | ${fmt(k.p50, 1)} | ${fmt(k.p99, 1)} | ${fmt(k.max, 1)} |`,
    ),
  ].join('\n');
}

/** Keys under `prefix` on each master of the cluster, by its port. */
async function keysByMaster(nodes, prefix) {
  const cluster = new Cluster(nodes.split(',').map((n) => ({ host: n.split(':')[0], port: Number(n.split(':')[1]) })));
  try {
    await cluster.ping();
    const out = {};
    for (const node of cluster.nodes('master')) out[node.options.port] = (await node.keys(`${prefix}:*`)).length;
    return out;
  } finally {
    cluster.disconnect();
  }
}

function clusterSection(r) {
  if (!r) return 'Not measured in this run.';
  const row = (label, x) =>
    `| ${label} | ${fmt(x.deliveries)} | ${fmt(x.seconds, 2)} | ${fmt(x.perSec)}${x.complete ? '' : ' (time cap)'} | ${fmt(x.duplicates)} | ${statuses(x.statusCounts)} |`;
  const masters = Object.entries(r.keysByMaster)
    .map(([port, n]) => `${fmt(n)} on :${port}`)
    .join(', ');
  return [
    "instant-ten-hosts' load (20 webhooks over ten receiver ports answering at once) with one worker at the",
    `defaults, first on the single Redis, then on a 6-node Redis Cluster on this machine (3 masters, 3 replicas;`,
    `scripts/redis-cluster.sh) with QUEUE_SHARDS=${r.shards}, an api of its own on the cluster enqueueing. Same run, same machine:`,
    'the cluster runs its six redis-server processes on the same two cores.',
    '',
    '| run | deliveries | seconds | per second | duplicates | statuses |',
    '|---|---:|---:|---:|---:|---|',
    row('single Redis', r.single),
    row(`Redis Cluster, ${r.shards} shards`, r.cluster),
    '',
    `Cluster / single: ${r.ratio === null ? 'n/a' : `${(100 * r.ratio).toFixed(1)}%`}. The run's keys on each master afterwards (queues' keys and hosts' admission state): ${masters}.`,
  ].join('\n');
}

/** Where the engine phases' figures come from when partial runs replaced the full run's (bench/render.mjs). */
function partialRuns(results) {
  const partials = results.enginePartials;
  if (!partials) return '';
  const replaced = new Set(partials.flatMap((p) => p.phases));
  const kept = ENGINE_PHASE_KEYS.filter((key) => results.engine?.[key] && !replaced.has(key));
  return [
    '',
    'The figures below come from these partial runs (a phase in two: the later), each ratio between phases of one run:',
    '',
    ...partials.map(
      (p) =>
        `- ${p.phases.join(', ')}: \`${p.command}\`, ${p.startedAt.slice(0, 16).replace('T', ' ')} to ${p.finishedAt.slice(11, 16)} UTC, code ${p.code.commit}${p.code.dirty ? ' (uncommitted src/ changes)' : ''}, ${p.machine.cpuModel}, ${p.machine.cpus} cores; load average (1 min) ${fmt(p.machine.loadBefore, 2)} before, ${fmt(p.machine.loadAfter, 2)} after${p.machine.loadBefore > p.machine.cpus / 2 ? ': the machine was shared with other work, so these figures are provisional' : ''}.`,
    ),
    ...(kept.length
      ? [
          '',
          `${kept.join(', ')}: the full run's (${results.finishedAt.slice(0, 16).replace('T', ' ')} UTC, code ${results.code.commit}).`,
        ]
      : []),
  ].join('\n');
}

/** The BENCHMARKS.md section of the engine phases. */
export function engineSection(results) {
  const e = results.engine ?? {};
  return `## Slow and dead receivers

These phases run after the others, each with one worker process of its own started with the service's
default settings (WORKER_CONCURRENCY and DATABASE_POOL_SIZE are passed only when
\`BENCH_WORKER_CONCURRENCY\` or \`DATABASE_POOL_SIZE\` are set in the bench's environment; host-overload
alone sets a retry schedule of seconds), each workspace with receivers of its own in
the bench process (host-fairness's two workspaces share one); the backlog is cleared before each. Overrides: \`BENCH_SLOW_DELIVERIES\`,
\`BENCH_SLOW_RECEIVERS\`, \`BENCH_SLOW_DELAY_MS\`, \`BENCH_SLOW_MAX_SEC\`, \`BENCH_DEAD_WEBHOOKS\`,
\`BENCH_ISOLATION_SUBMISSIONS\`, \`BENCH_ISOLATION_WAIT\`, \`BENCH_HOST_DELIVERIES\`, \`BENCH_OVERLOAD_DELIVERIES\`, \`BENCH_HOST_MAX_SEC\`,
\`BENCH_FAIRNESS_DELIVERIES\`, \`BENCH_PROPORTIONAL_DELIVERIES\`, \`BENCH_INSTANT_DELIVERIES\`, \`BENCH_THOUSAND_DELIVERIES\`,
\`BENCH_THOUSAND_MAX_SEC\`, \`BENCH_BACKLOG_DELIVERIES\`, \`BENCH_BACKLOG_MAX_SEC\`.
${partialRuns(results)}

### Slow receivers (delivery-slow)

${slowSection(e['delivery-slow'])}

### DELETE while attempts hang (delete-hanging)

${deleteSection(e['delete-hanging'])}

### One workspace's dead receivers against another's deliveries (isolation)

${isolationSection(e.isolation)}

### One host shared by many webhooks (host-slow, host-slow-floor, host-overload)

${hostSection(e['host-slow'], e['host-slow-floor'], e['host-overload'])}

### A host shared by two workspaces (host-fairness)

${fairnessSection(e['host-fairness'])}

### A host whose answers slow with its load (host-proportional)

${proportionalSection(e['host-proportional'])}

### Receivers answering at once: one host, ten hosts, and the floor (instant-one-host, instant-ten-hosts, instant-floor)

${instantSection(e['instant-one-host'], e['instant-ten-hosts'], e['instant-floor'], e['instant-floor-ten'])}

### A thousand hosts (host-thousand)

${thousandSection(e['host-thousand'], e['instant-ten-hosts'], e['host-thousand-floor'])}

### A backlog at a host that is down (redis-backlog)

${backlogSection(e['redis-backlog'])}

### On a Redis Cluster (cluster)

${clusterSection(e.cluster)}

### Delivery search (search)

${searchSection(e.search)}
`;
}
