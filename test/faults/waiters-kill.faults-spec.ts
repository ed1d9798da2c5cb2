import { settleCheckAndReport } from './support/end-state.js';
import { FAST_ENV, LOAD, Scenario } from './support/scenario.js';

const SCENARIO = 'two workers at hosts that admit two at a time; the worker holding waiters killed';

// Each host admits two attempts at once and a worker runs four: most deliveries wait, due, as rows at their
// host (in Postgres) or for their workspace's share of a worker, while the workers drain the hosts (each
// drain's wake job is its host's lease, which the killed worker's stalls hand to the other).
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
    const inLine = await dueAtHosts(s);
    await doomed.kill('SIGKILL');
    expect(inLine).toBeGreaterThan(0);
    const results = await stream.done;
    expect(s.workers.filter((w) => w.alive)).toHaveLength(1);

    await settleCheckAndReport(s, {
      scenario: SCENARIO,
      file: 'test/faults/waiters-kill.faults-spec.ts',
      injected:
        "two workers of four sockets each at hosts limited to two attempts in flight; the second killed with SIGKILL at 40% of the stream, holding hosts' drains (their wake jobs active, attempts leased and in flight) while due deliveries wait at the hosts; never restarted",
      results,
      extra: { workerKills: 1, inLineAtKill: inLine },
    });
  });
});

/** Due deliveries waiting at their hosts now (pending, due, not leased by an attempt). */
async function dueAtHosts(s: Scenario): Promise<number> {
  const { rows } = await s.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM deliveries
     WHERE status = 'pending' AND next_attempt_at <= now() AND lease_until IS NULL`,
  );
  return rows[0].n;
}
