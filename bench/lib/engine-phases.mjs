// The delivery-engine phases: a receiver's latency must cost a socket and a slot, never a Postgres
// connection. delivery-slow (throughput and Postgres connections with 250 ms receivers),
// delete-hanging (DELETE of a webhook whose attempt hangs on a dead receiver) and isolation (one
// workspace's dead receivers must not delay another's deliveries). Each runs its own worker process
// with the service's default settings against the bench's api, database and queue prefix, and its own
// receivers; each stops them at its end, failed or not. host-slow and host-overload put 20 webhooks at one
// host (one receiver port): the adaptive host limit's growth for a healthy host, its cut for one that
// answers 503 when overloaded. Targets and the BENCHMARKS.md section are here too.
import { Queue } from 'bullmq';
import { performance } from 'node:perf_hooks';
import { URL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { apiRequest, postSubmissions } from './http-bench.mjs';
import { PgActivitySampler, processTree } from './pg-activity.mjs';
import { CpuProbe, freePort, machineBusy, spawnNode, stopProcess, waitForHttp } from './processes.mjs';
import { ReceiverGroup } from './receiver-group.mjs';
import { createWorkspace, envInt, PG_URL, productEnv, REDIS_URL } from './setup.mjs';

export const ENGINE_PHASE_KEYS = ['delivery-slow', 'delete-hanging', 'isolation', 'host-slow', 'host-overload'];

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

/**
 * The three phases over the run's context: `db` (pg client on the bench database), `apiUrl`, `dbName`,
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

  async function startWorker(name, { waitReady = true, env = {} } = {}) {
    const port = await freePort();
    const handle = spawnNode(name, 'dist/worker.js', workerEnv(port, env));
    ctx.sampler.track('worker', handle);
    if (waitReady) await waitForHttp(handle, `http://127.0.0.1:${port}/metrics`);
    return handle;
  }

  const apiCall = (apiKey, method, path, body) => apiRequest(apiUrl, apiKey, method, path, body);

  /** A workspace of its own with one calculator, and one webhook per url bound to that calculator. */
  async function workspaceWithWebhooks(name, urls) {
    const env = productEnv({ dbName: ctx.dbName, queuePrefix: ctx.queuePrefix }, { LOG_LEVEL: ctx.logLevel });
    const { apiKey, calculators } = await createWorkspace(db, name, env, 1);
    const webhooks = [];
    for (const [i, url] of urls.entries()) {
      const { data } = await apiCall(apiKey, 'POST', '/api/v1/webhooks', {
        url: `${url}/hook/${i}`,
        name: `${name} ${i}`,
        calculators,
      });
      webhooks.push(data.id);
    }
    return { apiKey, calculator: calculators[0], webhooks };
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
        postgres: (
          await db.query(
            `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND pid <> $2`,
            [ctx.dbName, activity.samplerPid],
          )
        ).rows.map((r) => r.pid),
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
      const failures = {};
      const inflight = [];
      const spacingMs = (s.isolationSpreadSec * 1000) / s.isolationSubmissionsB;
      const t0 = performance.now();
      for (let seq = 0; seq < s.isolationSubmissionsB; seq += 1) {
        await sleep(Math.max(0, t0 + seq * spacingMs - performance.now()));
        sentAt[seq] = performance.now();
        const body = { ...SUBMISSION_BODY, data: { ...SUBMISSION_BODY.data, benchSeq: seq } };
        inflight.push(
          pool
            .request({
              method: 'POST',
              path: `/api/v1/calculators/${b.calculator}/submissions`,
              headers: { 'x-ac-api-key': b.apiKey, 'content-type': 'application/json' },
              body: JSON.stringify(body),
            })
            .then(async (response) => {
              await response.body.dump();
              if (response.statusCode !== 200) failures[response.statusCode] = (failures[response.statusCode] ?? 0) + 1;
            })
            .catch(
              (error) => (failures[error.code ?? error.message] = (failures[error.code ?? error.message] ?? 0) + 1),
            ),
        );
      }
      await Promise.all(inflight);
      const lastSentAt = performance.now();
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

  /**
   * `hostWebhooks` webhooks at one receiver port, `hostDeliveries` deliveries created with no worker
   * running, then one worker; runs until none is pending (or hostMaxSec from the first receipt).
   */
  async function oneHost(name, deliveries, receiverOptions, workerExtraEnv) {
    const receivers = new ReceiverGroup(1, receiverOptions);
    let worker;
    try {
      await receivers.listen();
      const ws = await workspaceWithWebhooks(name, Array(settings.hostWebhooks).fill(receivers.urls[0]));
      const submissions = Math.ceil(deliveries / settings.hostWebhooks);
      await ctx.clearBacklog();
      log(`${name}: ${submissions} submissions x ${settings.hostWebhooks} webhooks at one host, no worker running`);
      await submit(ws, submissions);
      const expected = await deliveriesOf(ws.webhooks, 'pending');
      const busyBefore = await machineBusy();
      worker = await startWorker(`worker-${name}`, { waitReady: false, env: workerExtraEnv });
      await waitUntil(() => receivers.requests > 0, 60_000, [worker]);
      let pending = expected;
      const done = await waitUntil(
        async () => (pending = await deliveriesOf(ws.webhooks, 'pending')) === 0,
        receivers.firstAt + settings.hostMaxSec * 1000 - performance.now(),
        [worker],
      );
      const seconds = (performance.now() - receivers.firstAt) / 1000;
      return {
        receivers,
        ws,
        expected,
        done,
        pending,
        seconds,
        busyBefore,
        statusCounts: await statusCounts(ws.webhooks),
      };
    } finally {
      await receivers.close();
      if (worker) await stopProcess(worker);
    }
  }

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

  const phases = {
    'delivery-slow': deliverySlow,
    'delete-hanging': deleteHanging,
    isolation,
    'host-slow': hostSlow,
    'host-overload': hostOverload,
  };
  return { settings, run: (key) => phases[key]() };
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
    percentileRow(
      "B's submission sent -> webhook received",
      r.receiptMs,
      `${r.received} of ${r.submissionsB} arrived${r.bFailedSubmissions ? ` (${r.bFailedSubmissions} submissions failed)` : ''}`,
    ),
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

/** The BENCHMARKS.md section of the engine phases. */
export function engineSection(results) {
  const e = results.engine ?? {};
  return `## Slow and dead receivers

These phases run after the others, each with one worker process of its own started with the service's
default settings (WORKER_CONCURRENCY and DATABASE_POOL_SIZE are passed only when
\`BENCH_WORKER_CONCURRENCY\` or \`DATABASE_POOL_SIZE\` are set in the bench's environment; host-overload
alone sets a retry schedule of seconds), each workspace with receivers of its own in
the bench process; the backlog is cleared before each. Overrides: \`BENCH_SLOW_DELIVERIES\`,
\`BENCH_SLOW_RECEIVERS\`, \`BENCH_SLOW_DELAY_MS\`, \`BENCH_SLOW_MAX_SEC\`, \`BENCH_DEAD_WEBHOOKS\`,
\`BENCH_ISOLATION_SUBMISSIONS\`, \`BENCH_ISOLATION_WAIT\`, \`BENCH_HOST_DELIVERIES\`, \`BENCH_OVERLOAD_DELIVERIES\`, \`BENCH_HOST_MAX_SEC\`.

### Slow receivers (delivery-slow)

${slowSection(e['delivery-slow'])}

### DELETE while attempts hang (delete-hanging)

${deleteSection(e['delete-hanging'])}

### One workspace's dead receivers against another's deliveries (isolation)

${isolationSection(e.isolation)}

### One host shared by many webhooks (host-slow, host-overload)

${hostSection(e['host-slow'], e['host-overload'])}
`;
}
