import { percentile, receiptLatencies, settleCheckAndReport, slowestDeliveries } from './support/end-state.js';
import type { FaultReceiver } from './support/fault-receiver.js';
import { waitUntil } from './support/ports.js';
import { FAST_ENV, LOAD, Scenario, type Webhook } from './support/scenario.js';
import type { SubmissionResult } from './support/submission-stream.js';

const SCENARIO = 'one receiver hangs (never answers), beside healthy receivers';
// Far above what a healthy receiver needs here (about 2 requests open at a time), a quarter of the
// two workers' 32 slots.
const CAP = 8;
// No fault, fault, no fault, ...: the two are measured alternately in one stream, so a change in
// the machine's load over the run weighs on both alike.
const PHASES = 12;

interface Window {
  fault: boolean;
  from: number;
  to: number;
}

describe(`fault: ${SCENARIO}`, () => {
  let s: Scenario | undefined;
  afterAll(() => s?.cleanup());

  it('caps attempts in flight to the hanging receiver across workers; healthy latency p99 stays within 2x', async () => {
    s = await Scenario.create({
      name: 'hanging-receiver',
      privateRedis: true, // its command count shows what waiting over the cap costs
      // Every delivery waiting over the cap is overdue; a 1 s sweep would re-add them all every second.
      env: { ...FAST_ENV, SWEEP_INTERVAL_MS: '5000', DELIVERY_HOST_INITIAL_LIMIT: String(CAP) },
    });
    const scenario = s;
    await s.startApi();
    await s.createWorkspace(1);
    const calcs = s.calculatorIds;
    const healthy: Webhook[] = [];
    for (const name of ['healthy-1', 'healthy-2', 'healthy-3']) {
      const receiver = await s.startReceiver(name, () => ({
        status: 200,
        delayMs: 10 + Math.floor(Math.random() * 20),
      }));
      healthy.push(await s.registerWebhook(name, receiver, calcs));
    }
    await s.startWorker();
    await s.startWorker();
    const healthyDone = () =>
      waitUntil(
        async () => {
          const { rows } = await scenario.db.query(
            `SELECT count(*)::int AS n FROM deliveries WHERE status = 'pending' AND webhook_id = ANY($1)`,
            [healthy.map((w) => w.id)],
          );
          return rows[0].n === 0;
        },
        90_000,
        'the healthy deliveries to end',
      );

    // The fault is switched on by registering a webhook at a receiver that never answers (a new
    // receiver each time: a new destination), and off by removing it.
    const hangingReceivers: FaultReceiver[] = [];
    const hangingHooks: Webhook[] = [];
    const windows: Window[] = [];
    // Redis commands and CPU time of each process, without and with the fault.
    const usage = () => ({
      at: Date.now(),
      redisOps: 0,
      workers: scenario.workers.reduce((sum, w) => sum + w.cpuMs(), 0),
      api: scenario.api!.cpuMs(),
      redis: scenario.redis!.cpuMs(),
      tests: process.cpuUsage().user / 1000 + process.cpuUsage().system / 1000,
    });
    type Usage = ReturnType<typeof usage>;
    const spent: Record<'clean' | 'fault', Usage> = {
      clean: { at: 0, redisOps: 0, workers: 0, api: 0, redis: 0, tests: 0 },
      fault: { at: 0, redisOps: 0, workers: 0, api: 0, redis: 0, tests: 0 },
    };
    let last = usage();
    const countUsage = async (fault: boolean) => {
      const now = { ...usage(), redisOps: (await scenario.redis!.commandCount()).count };
      const into = spent[fault ? 'fault' : 'clean'];
      for (const key of Object.keys(into) as (keyof Usage)[]) into[key] += now[key] - last[key];
      last = now;
    };
    // Half the rate of the other scenarios: latency is only worth comparing while the workers keep up.
    const n = Math.round(LOAD.submissions * 0.75);
    const perSecond = LOAD.perSecond / 2;
    // Warm-up (connections, JIT) before anything is measured; these are checked like the rest.
    const warmUp = await s.stream(5 * perSecond, { perSecond, firstN: n }).done;
    await healthyDone();
    last = { ...usage(), redisOps: (await s.redis!.commandCount()).count };
    const stream = s.stream(n, { perSecond });
    let from = Date.now();
    for (let phase = 1; phase < PHASES; phase++) {
      await stream.reached(Math.floor((phase * n) / PHASES));
      if (phase % 2 === 1) {
        await countUsage(false);
        const receiver = await s.startReceiver(`hanging-${hangingReceivers.length + 1}`, () => ({ hang: true }));
        hangingReceivers.push(receiver);
        const hook = await s.registerWebhook(receiver.name, receiver, calcs);
        hangingHooks.push(hook);
        windows.push({ fault: false, from, to: hook.registeringAt });
        from = hook.registeredAt;
      } else {
        await countUsage(true);
        const removal = await s.removeWebhook(hangingHooks.at(-1)!);
        windows.push({ fault: true, from, to: removal.startedAt });
        from = removal.returnedAt;
      }
    }
    const results = await stream.done;
    const faultAtEnd = PHASES % 2 === 0;
    await healthyDone();
    await countUsage(faultAtEnd);
    if (faultAtEnd) {
      const removal = await s.removeWebhook(hangingHooks.at(-1)!);
      windows.push({ fault: true, from, to: removal.startedAt });
    } else {
      windows.push({ fault: false, from, to: Infinity });
    }

    const sentIn = (fault: boolean): SubmissionResult[] =>
      results.filter((r) => windows.some((w) => w.fault === fault && r.startedAt >= w.from && r.startedAt < w.to));
    const before = receiptLatencies(s, sentIn(false), healthy);
    const after = receiptLatencies(s, sentIn(true), healthy);
    // p99 of each phase, in order: shows whether one phase (a hiccup of the machine) decides the result.
    const phaseP99 = windows
      .map((w) => {
        const inWindow = results.filter((r) => r.startedAt >= w.from && r.startedAt < w.to);
        return `${w.fault ? 'fault' : 'clean'} ${percentile(receiptLatencies(scenario, inWindow, healthy), 99)}`;
      })
      .join(', ');
    const p99Before = percentile(before, 99);
    const p99After = percentile(after, 99);
    const countAttempts = async () => {
      const { rows } = await scenario.db.query(
        `SELECT count(*)::int AS n FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
         WHERE d.webhook_id = ANY($1)`,
        [hangingHooks.map((w) => w.id)],
      );
      return rows[0].n as number;
    };
    const hangingRequests = hangingReceivers.reduce((sum, r) => sum + r.received.length, 0);
    // DELETE does not wait for receivers: the last phase's attempts, already sent, are recorded when
    // they time out, up to one attempt timeout after it returned.
    const recordedBy = Date.now() + Number(FAST_ENV.DELIVERY_TIMEOUT_MS) + 3_000;
    let hangingAttempts = await countAttempts();
    while (hangingAttempts < hangingRequests && Date.now() < recordedBy) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      hangingAttempts = await countAttempts();
    }
    const maxInFlight = Math.max(...hangingReceivers.map((r) => r.maxInFlight));
    const broken: string[] = [];
    if (!(p99After <= 2 * p99Before)) {
      broken.push(`healthy p99 ${p99After} ms with the fault, > 2 x ${p99Before} ms without`);
    }
    for (const r of hangingReceivers.filter((r) => r.maxInFlight > CAP)) {
      broken.push(`${r.maxInFlight} requests open at once at ${r.name}, cap ${CAP}: ${JSON.stringify(r.busiest)}`);
    }
    // A job over the cap waits without spending an attempt: every recorded attempt was a request.
    if (hangingAttempts !== hangingRequests) {
      broken.push(`${hangingAttempts} attempts recorded for the hanging receivers, ${hangingRequests} requests`);
    }
    const rate = (u: Usage, key: keyof Usage) => Math.round((u[key] * 1000) / Math.max(u.at, 1));
    const bothRates = (key: keyof Usage) =>
      `${rate(spent.clean, key)} without, ${rate(spent.fault, key)} with the fault`;
    await settleCheckAndReport(s, {
      scenario: SCENARIO,
      file: 'test/faults/hanging-receiver.faults-spec.ts',
      injected: `one stream to three healthy receivers, in ${PHASES} alternating phases: without the fault, then with a webhook at a receiver that never answers (attempt timeout ${FAST_ENV.DELIVERY_TIMEOUT_MS} ms) on the same calculator, removed with DELETE at the end of the phase; in-flight cap ${CAP} per destination across two workers of concurrency ${FAST_ENV.WORKER_CONCURRENCY}`,
      results: [...warmUp, ...results],
      extraFailures: broken,
      extra: {
        healthyP50BaselineMs: percentile(before, 50),
        healthyP99BaselineMs: p99Before,
        healthyP50FaultMs: percentile(after, 50),
        healthyP99FaultMs: p99After,
        latencySamples: `${before.length} without, ${after.length} with the fault`,
        phaseP99Ms: phaseP99,
        slowestHealthy: await slowestDeliveries(s, healthy, 3),
        inFlightCap: CAP,
        healthyMaxInFlight: healthy.map((w) => w.receiver!.maxInFlight).join('/'),
        hangingMaxInFlight: maxInFlight,
        hangingAttempts: `${hangingAttempts}/${hangingRequests}`,
        redisCommandsPerSecond: bothRates('redisOps'),
        cpuMsPerSecond: ['workers', 'api', 'redis', 'tests']
          .map((k) => `${k} ${bothRates(k as keyof Usage)}`)
          .join('; '),
      },
    });
  });
});
