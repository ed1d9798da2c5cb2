// The delivery-engine phases: a receiver's latency must cost a socket and a slot, never a Postgres
// connection. delivery-slow (throughput and Postgres connections with 250 ms receivers),
// delete-hanging (DELETE of a webhook whose attempt hangs on a dead receiver) and isolation (one
// workspace's dead receivers must not delay another's deliveries). Each runs its own worker process
// with the service's default settings against the bench's api, database and queue prefix, and its own
// receivers; each stops them at its end, failed or not. host-slow and host-overload put 20 webhooks at one
// host (one receiver port): the adaptive host limit's growth for a healthy host, its cut for one that
// answers 503 when overloaded. Hosts shared by many webhooks: host-fairness (a workspace's few deliveries
// at a host where another's backlog waits), host-proportional (a host whose answers slow with its load),
// instant-one-host and instant-ten-hosts (admission's cost against bare BullMQ), instant-floor (the same
// load with the queue and admission taken away: what the attempt itself costs) and host-thousand (many
// hosts, and the admission state they leave in Redis). Targets and the BENCHMARKS.md section are here too.
import { Queue } from 'bullmq';
import { Cluster, Redis } from 'ioredis';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { clearInterval, setInterval } from 'node:timers';
import { URL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { apiRequest, postSubmissions } from './http-bench.mjs';
import { PgActivitySampler, postgresBackends, processTree } from './pg-activity.mjs';
import { CpuProbe, freePort, machineBusy, spawnNode, stopProcess, waitForHttp } from './processes.mjs';
import { ReceiverGroup } from './receiver-group.mjs';
import { searchPhase } from './search-phase.mjs';
import { createWorkspace, envInt, insertWorkspaces, PG_URL, productEnv, REDIS_URL } from './setup.mjs';

export const ENGINE_PHASE_KEYS = [
  'delivery-slow',
  'delete-hanging',
  'isolation',
  'host-slow',
  'host-overload',
  'host-fairness',
  'host-proportional',
  'instant-one-host',
  'instant-ten-hosts',
  'instant-floor',
  'host-thousand',
  'cluster',
  'search',
];

const SUBMISSION_BODY = { data: { answer: 42, email: 'bench@example.com', total: 123.45 }, finished: true };
const DEFAULT_POOL_SIZE = 10; // the worker's DATABASE_POOL_SIZE default
const DEFAULT_DELIVERY_TIMEOUT_MS = 15_000; // the service's DELIVERY_TIMEOUT_MS default, never overridden here

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
    if (waitReady) await waitForHttp(handle, `http://127.0.0.1:${port}/metrics`);
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
  const oneHost = (name, deliveries, receiverOptions, workerEnv) =>
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
      { workerEnv },
    );

  const median = (values) => percentiles(values).p50;

  async function hostSlow() {
    const delayMs = settings.slowDelayMs;
    log(`host-slow: one worker, default settings; one receiver answering after ${delayMs} ms`);
    const r = await oneHost('host-slow', settings.hostDeliveries, { delayMs }, {});
    const after = r.receivers.arrivals.filter(([at]) => at - r.receivers.firstAt >= 5_000);
    return {
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
      workerPeakRssMb: r.workerPeakRssMb,
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
   * The admission keys (`<queuePrefix>:dest:<host>:<kind>`) of the given hosts: how many, their MEMORY
   * USAGE, and their TTLs; keys of other hosts (earlier phases') are only counted.
   */
  async function admissionKeys(destinations) {
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    const base = `${ctx.queuePrefix}:dest:`;
    const seen = new Set();
    const out = { keys: 0, bytes: 0, byKind: {}, withoutTtl: 0, pttlMaxMs: null, pttlMinMs: null, otherHostsKeys: 0 };
    try {
      let cursor = '0';
      do {
        const [next, found] = await redis.scan(cursor, 'MATCH', `${base}*`, 'COUNT', 1000);
        cursor = next;
        const fresh = found.filter((key) => !seen.has(key));
        for (const key of fresh) seen.add(key);
        const mine = fresh.filter((key) => destinations.has(key.slice(base.length, key.lastIndexOf(':'))));
        out.otherHostsKeys += fresh.length - mine.length;
        if (mine.length === 0) continue;
        const pipeline = redis.pipeline();
        for (const key of mine) pipeline.call('MEMORY', 'USAGE', key).pttl(key);
        const answers = await pipeline.exec();
        mine.forEach((key, i) => {
          const [, bytes] = answers[2 * i];
          const [, pttl] = answers[2 * i + 1];
          if (pttl === -2) return; // expired meanwhile
          const kind = key.slice(key.lastIndexOf(':') + 1);
          out.keys += 1;
          out.bytes += Number(bytes ?? 0);
          out.byKind[kind] = (out.byKind[kind] ?? 0) + 1;
          if (pttl === -1) out.withoutTtl += 1;
          else {
            out.pttlMaxMs = Math.max(out.pttlMaxMs ?? 0, pttl);
            out.pttlMinMs = Math.min(out.pttlMinMs ?? Infinity, pttl);
          }
        });
      } while (cursor !== '0');
    } finally {
      redis.disconnect();
    }
    return out;
  }

  /**
   * thousandHosts receivers answering at once, thousandWebhooksPerHost webhooks at each, spread over
   * workspaces of webhooksPerWorkspace (each workspace's webhooks at as many hosts, each host's from
   * several workspaces), one calculator per workspace bound to all its webhooks.
   */
  async function hostThousand() {
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
      'host-thousand',
      receivers,
      async (urls) => {
        destinations = new Set(urls.map((url) => new URL(url).host));
        log(
          `host-thousand: ${hosts} receivers; ${workspaces} workspaces (SQL) of ${s.webhooksPerWorkspace} webhooks (API)`,
        );
        const inserted = await insertWorkspaces(
          db,
          Array.from({ length: workspaces }, (_, w) => `bench-thousand-${w}`),
        );
        const created = await mapLimit(inserted, 8, async (ws, w) => {
          const count = Math.min(s.webhooksPerWorkspace, total - w * s.webhooksPerWorkspace);
          const at = Array.from({ length: count }, (_, j) => urls[(w * s.webhooksPerWorkspace + j) % hosts]);
          return { ...ws, webhooks: await createWebhooks(ws.apiKey, ws.calculator, `bench-thousand-${w}`, at) };
        });
        return {
          webhooks: created.flatMap((ws) => ws.webhooks),
          submitAll: async () => {
            log(`host-thousand: ${perWorkspace} submissions x ${total} webhooks, no worker running`);
            await mapLimit(created, 8, (ws) => submit(ws, perWorkspace, 2));
          },
        };
      },
      {
        maxSec: s.thousandMaxSec,
        started: (worker) => {
          files.limitWorker = openFiles(worker.pid).limit;
          filesTimer = setInterval(() => sampleFiles(worker.pid), 1000);
        },
        ended: async (worker) => {
          clearInterval(filesTimer);
          sampleFiles(worker.pid);
          return admissionKeys(destinations);
        },
        stopped: () => admissionKeys(destinations),
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
      /** The admission keys of the phase's hosts once every delivery ended (worker up), and after it stopped. */
      admissionKeys: { afterRun: r.atEnd, afterWorkerStop: r.afterStop },
      openFiles: files,
      workerPeakRssMb: r.workerPeakRssMb,
      cpuMsPerDelivery: r.cpuMsPerDelivery,
      busyBefore: r.busyBefore,
    };
  }

  const phases = {
    'delivery-slow': deliverySlow,
    'delete-hanging': deleteHanging,
    isolation,
    'host-slow': hostSlow,
    'host-overload': hostOverload,
    'host-fairness': hostFairness,
    'host-proportional': hostProportional,
    'instant-one-host': () => instantHosts('instant-one-host', 1),
    'instant-ten-hosts': () => instantHosts('instant-ten-hosts', settings.instantHosts),
    'instant-floor': () => instantHosts('instant-floor', 1, {}, 'bench/floor-worker.mjs'),
    'host-thousand': hostThousand,
    cluster: clusterPhase,
    search: async () => ({ busyBefore: await machineBusy(), ...(await searchPhase(ctx)) }),
  };
  return { settings, run: (key) => phases[key](), instantHosts };
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
}

// ---------------------------------------------------------------------------------------------- report

const fmt = (n, digits = 0) =>
  n === null || n === undefined || Number.isNaN(n)
    ? 'n/a'
    : n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

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
  const hostSlow = e['host-slow'];
  add(
    {
      name: `deliveries/s, ${hostSlow?.webhooks ?? 20} webhooks at one host answering after ${hostSlow?.receiverDelayMs ?? 250} ms, one worker (defaults)`,
      value: hostSlow?.perSec,
      invalid: hostSlow && !hostSlow.complete ? 'not every delivery ended within the phase' : null,
      target: '>= 1,000/s',
    },
    (v) => v >= 1000,
  );
  const overload = e['host-overload'];
  const notSucceeded = overload ? overload.deliveries - (overload.statusCounts.succeeded ?? 0) : 0;
  add(
    {
      name: `share of attempts answered 503 after the first 5 s, one host answering 503 above ${overload?.overloadAbove ?? 30} open`,
      value: overload?.percent503After5s,
      invalid: notSucceeded > 0 ? `${notSucceeded} of ${overload.deliveries} deliveries did not succeed` : null,
      target: '< 10 (%), all succeeded',
    },
    (v) => v < 10,
  );
  const fair = e['host-fairness'];
  const fairMissing = fair ? fair.submissionsB - fair.received : 0;
  add(
    {
      name: `workspace B's submission-to-receipt max at a host where A's ${fmt(fair?.deliveriesA ?? 2000)} deliveries wait (${fair?.receiverDelayMs ?? 250} ms answers)`,
      value: fair ? Math.max(fair.receiptMs.max ?? 0, fair.missingAtLeastMs ?? 0) || null : null,
      invalid: fairMissing > 0 ? `${fairMissing} of ${fair.submissionsB} not received within the phase` : null,
      target: '< 1,250 ms',
    },
    (v) => v < 1250,
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
  const bullmq = results.ceilings?.bullmq?.jobsPerSec ?? null;
  for (const [key, where] of [
    ['instant-one-host', 'one host'],
    ['instant-ten-hosts', 'ten hosts'],
  ]) {
    const r = e[key];
    const ratio = r?.perSec && bullmq ? r.perSec / bullmq : null;
    add(
      {
        name: `deliveries/s, ${r?.webhooks ?? 20} webhooks at ${where} answering at once, one worker (defaults)`,
        value: r?.perSec,
        ceiling: bullmq,
        ratio,
        invalid: r && !r.complete ? 'not every delivery ended within the phase' : null,
        target: '>= 25.0% of ceiling',
      },
      () => (ratio === null ? null : ratio >= 0.25),
    );
  }
  const thousand = e['host-thousand'];
  const tenHosts = e['instant-ten-hosts']?.perSec ?? null;
  const thousandRatio = thousand?.perSec && tenHosts ? thousand.perSec / tenHosts : null;
  add(
    {
      name: `deliveries/s, ${fmt(thousand?.hosts ?? 1000)} hosts x ${thousand?.webhooksPerHost ?? 10} webhooks answering at once, one worker (ceiling: instant-ten-hosts)`,
      value: thousand?.perSec,
      ceiling: tenHosts,
      ratio: thousandRatio,
      invalid: thousand && !thousand.complete ? 'not every delivery ended within the phase' : null,
      target: '>= 80.0% of ceiling',
    },
    () => (thousandRatio === null ? null : thousandRatio >= 0.8),
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
  const keys = thousand?.admissionKeys;
  add(
    {
      name: `host-thousand's admission keys (<queuePrefix>:dest:*) without a TTL, after the run and after the worker stopped`,
      value: keys ? Math.max(keys.afterRun?.withoutTtl ?? 0, keys.afterWorkerStop?.withoutTtl ?? 0) : null,
      target: '0',
    },
    (v) => v === 0,
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

function hostSection(slow, overload) {
  if (!slow && !overload) return 'Not measured in this run.';
  const row = (label, r) =>
    r
      ? `| ${label} | ${fmt(r.deliveries)} | ${fmt(r.seconds, 1)} | ${fmt(r.perSec)} | ${r.maxOpen} | ${fmt(r.medianOpenAfter5s)} | ${r.percent503After5s === undefined ? '-' : `${fmt(r.percent503After5s, 1)} %`} | ${Object.entries(
          r.statusCounts,
        )
          .map(([s, n]) => `${n} ${s}`)
          .join(', ')} |`
      : `| ${label} | not measured | | | | | | |`;
  return [
    `${slow?.webhooks ?? overload?.webhooks} webhooks of one workspace point at one receiver port (one host); the deliveries are`,
    'created with no worker running, then one worker process starts with the defaults (host-overload: with',
    `a retry schedule of ${overload?.retrySchedule?.split(',').length ?? 15} x 1 s). host-slow's receiver answers 200 after ${slow?.receiverDelayMs ?? 250} ms; host-overload's answers`,
    `503 to a request that finds more than ${overload?.overloadAbove ?? 30} open, else 200 after the same delay. Open counts are`,
    "the receiver's, at each request's arrival, from 5 s after the first one.",
    '',
    '| phase | deliveries | seconds | per second | open (max) | open after 5 s (median) | 503 after 5 s | statuses |',
    '|---|---:|---:|---:|---:|---:|---:|---|',
    row('host-slow', slow),
    row('host-overload', overload),
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

function instantSection(one, ten, floor, bullmq) {
  if (!one && !ten) return 'Not measured in this run.';
  const row = (label, r) =>
    r
      ? `| ${label} | ${r.hosts} | ${fmt(r.deliveries)} | ${fmt(r.seconds, 2)} | ${fmt(r.perSec)}${r.complete ? '' : ' (time cap)'} | ${bullmq?.jobsPerSec ? `${((100 * r.perSec) / bullmq.jobsPerSec).toFixed(1)}%` : 'n/a'} | ${fmt(r.requestsPerHost.min)}-${fmt(r.requestsPerHost.max)} | ${statuses(r.statusCounts)} |`
      : `| ${label} | not measured | | | | | | |`;
  return [
    `${one?.webhooks ?? ten?.webhooks} webhooks of one workspace, at one receiver port (instant-one-host) or spread evenly over ten`,
    '(instant-ten-hosts); the receivers answer 200 at once. The deliveries are created with no worker running,',
    'then one worker starts with the defaults; the rate runs from the first receipt to none pending. The ratio',
    `is to bare BullMQ's no-op jobs at the same concurrency (${bullmq ? `${fmt(bullmq.jobsPerSec)} jobs/s, concurrency ${bullmq.concurrency}, in this run` : 'not measured in this run'}).`,
    "instant-floor is instant-one-host's load attempted by bench/floor-worker.mjs: the worker's own attempt",
    '(connect, claim, sign, send, record) for every pending delivery, WORKER_CONCURRENCY at a time, with no',
    'queue and no admission. It is not a way to deliver (no retries, no fairness, no host limit): it is what',
    'any queue design that keeps the claim and the record in Postgres starts from.',
    '',
    '| phase | hosts | deliveries | seconds | per second | ratio to bare BullMQ | requests per host (min-max) | statuses |',
    '|---|---:|---:|---:|---:|---:|---|---|',
    row('instant-one-host', one),
    row('instant-ten-hosts', ten),
    row('instant-floor', floor),
    '',
    'CPU time per delivery (ms, read from /proc from the first request until none is pending, over the deliveries',
    "received meanwhile; the bench process holds the receivers and polls). Bare BullMQ's row is per no-op job",
    '(its worker process and redis-server).',
    '',
    '| phase | worker | postgres | redis | bench (receivers) | all |',
    '|---|---:|---:|---:|---:|---:|',
    cpuRow('instant-one-host', one?.cpuMsPerDelivery),
    cpuRow('instant-ten-hosts', ten?.cpuMsPerDelivery),
    cpuRow('instant-floor', floor?.cpuMsPerDelivery),
    cpuRow(
      'bare BullMQ',
      bullmq?.cpuMsPerJob
        ? { worker: bullmq.cpuMsPerJob, postgres: 0, redis: bullmq.redisCpuMsPerJob, bench: 0 }
        : null,
    ),
  ].join('\n');
}

function thousandSection(r, ten) {
  if (!r) return 'Not measured in this run.';
  const keys = (label, k) =>
    k
      ? `| ${label} | ${fmt(k.keys)} | ${fmt(k.bytes / 1024, 1)} KiB | ${Object.entries(k.byKind)
          .map(([kind, n]) => `${fmt(n)} ${kind}`)
          .join(', ')} | ${fmt(k.withoutTtl)} | ${k.pttlMaxMs === null ? '-' : `${fmt(k.pttlMaxMs / 60_000, 1)} min`} |`
      : `| ${label} | not measured | | | | |`;
  const tenRate = ten?.perSec ?? null;
  return [
    `${fmt(r.hosts)} receiver ports in the bench process (one host each), answering 200 at once; ${r.webhooksPerHost} webhooks at each,`,
    `in ${r.workspaces} workspaces of up to 100 (the api's MAX_WEBHOOKS_PER_WORKSPACE default), each workspace's webhooks`,
    "at as many hosts and each host's webhooks from several workspaces; one calculator per workspace bound to all",
    'its webhooks (workspaces, keys and calculators inserted by SQL, webhooks made through the API). The',
    'deliveries are created with no worker running, then one worker starts with the defaults.',
    `Open files: limit ${r.openFiles.limitBench} for the bench, ${r.openFiles.limitWorker ?? 'n/a'} for the worker (not raised); at most`,
    `${fmt(r.openFiles.peakBench)} open in the bench and ${fmt(r.openFiles.peakWorker)} in the worker (sampled each second).`,
    '',
    '| deliveries | seconds | per second | ratio to instant-ten-hosts | requests per host (min-max) | statuses |',
    '|---:|---:|---:|---:|---|---|',
    `| ${fmt(r.deliveries)} | ${fmt(r.seconds, 2)} | ${fmt(r.perSec)}${r.complete ? '' : ` (${fmt(r.pending)} pending at the time cap)`} | ${r.perSec && tenRate ? `${((100 * r.perSec) / tenRate).toFixed(1)}% of ${fmt(tenRate)}/s` : 'n/a'} | ${fmt(r.requestsPerHost.min)}-${fmt(r.requestsPerHost.max)} | ${statuses(r.statusCounts)} |`,
    '',
    'The admission keys of these hosts (`<queuePrefix>:dest:<host>:<kind>`), their total MEMORY USAGE and TTLs.',
    'An idle one goes when its TTL runs out, so after the longest PTTL only keys without a TTL would remain.',
    '',
    '| when | keys | memory | kinds | without TTL | longest PTTL |',
    '|---|---:|---:|---|---:|---:|',
    keys('every delivery ended, worker up', r.admissionKeys.afterRun),
    keys('after the worker stopped', r.admissionKeys.afterWorkerStop),
    '',
    "CPU time per delivery (ms, read from /proc as in the instant receivers' table), beside instant-ten-hosts:",
    '',
    '| phase | worker | postgres | redis | bench (receivers) | all |',
    '|---|---:|---:|---:|---:|---:|',
    cpuRow('host-thousand', r.cpuMsPerDelivery),
    cpuRow('instant-ten-hosts', ten?.cpuMsPerDelivery),
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
\`BENCH_THOUSAND_MAX_SEC\`.

### Slow receivers (delivery-slow)

${slowSection(e['delivery-slow'])}

### DELETE while attempts hang (delete-hanging)

${deleteSection(e['delete-hanging'])}

### One workspace's dead receivers against another's deliveries (isolation)

${isolationSection(e.isolation)}

### One host shared by many webhooks (host-slow, host-overload)

${hostSection(e['host-slow'], e['host-overload'])}

### A host shared by two workspaces (host-fairness)

${fairnessSection(e['host-fairness'])}

### A host whose answers slow with its load (host-proportional)

${proportionalSection(e['host-proportional'])}

### Receivers answering at once: one host, ten hosts, and the floor (instant-one-host, instant-ten-hosts, instant-floor)

${instantSection(e['instant-one-host'], e['instant-ten-hosts'], e['instant-floor'], results.ceilings?.bullmq)}

### A thousand hosts (host-thousand)

${thousandSection(e['host-thousand'], e['instant-ten-hosts'])}

### On a Redis Cluster (cluster)

${clusterSection(e.cluster)}

### Delivery search (search)

${searchSection(e.search)}
`;
}
