import { Redis } from 'ioredis';
import { settleCheckAndReport } from './support/end-state.js';
import { FAST_ENV, LOAD, Scenario } from './support/scenario.js';

const SCENARIO = 'two workers at hosts that admit two at a time; the worker holding waiters killed';

// Each host admits two attempts at once and a worker runs four: most jobs wait, in a host's line (parked,
// some woken with a slot kept for them, one per worker in process) or for their workspace's share of a
// worker (in process).
const ENV = {
  ...FAST_ENV,
  WORKER_CONCURRENCY: '4',
  DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: '2',
  DELIVERY_HOST_INITIAL_LIMIT: '2',
  DELIVERY_HOST_MAX_LIMIT: '2',
};

describe(`fault: ${SCENARIO}`, () => {
  let s: Scenario | undefined;
  afterAll(() => s?.cleanup());

  it('loses no waiter: the surviving worker delivers every accepted submission', async () => {
    s = await Scenario.create({ name: 'waiters-kill', env: ENV });
    await s.startApi();
    await s.createWorkspace(2);
    // Slow enough that lines form at the hosts under the stream's rate.
    await s.registerHealthyWebhooks(30, 30);
    await s.startWorker();
    const doomed = await s.startWorker();

    const n = LOAD.submissions;
    const stream = s.stream(n);
    await stream.reached(Math.floor(n * 0.4));
    const inLine = await waitersInLine(s);
    await doomed.kill('SIGKILL');
    expect(inLine).toBeGreaterThan(0);
    const results = await stream.done;
    expect(s.workers.filter((w) => w.alive)).toHaveLength(1);

    await settleCheckAndReport(s, {
      scenario: SCENARIO,
      file: 'test/faults/waiters-kill.faults-spec.ts',
      injected:
        'two workers of four slots each at hosts limited to two attempts in flight; the second killed with SIGKILL at 40% of the stream, holding slots, turns kept for woken jobs, jobs waiting in process for its share or for a turn at a host, and jobs it was parking; never restarted',
      results,
      extra: { workerKills: 1, inLineAtKill: inLine },
    });
  });
});

/** Jobs in the hosts' lines (admission's `waiting` hashes) now. */
async function waitersInLine(s: Scenario): Promise<number> {
  const redis = new Redis(s.redisUrl);
  try {
    const keys = await redis.keys(`${s.queuePrefix}:dest:*:waiting`);
    const sizes = await Promise.all(keys.map((key) => redis.hlen(key)));
    return sizes.reduce((a, b) => a + b, 0);
  } finally {
    redis.disconnect();
  }
}
