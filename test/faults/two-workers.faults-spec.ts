import { settleCheckAndReport } from './support/end-state.js';
import { FAST_ENV, LOAD, Scenario } from './support/scenario.js';

const SCENARIO = 'two workers, one killed with SIGKILL and never restarted';

describe(`fault: ${SCENARIO}`, () => {
  let s: Scenario | undefined;
  afterAll(() => s?.cleanup());

  it('the surviving worker takes over the dead one’s jobs; nothing is lost', async () => {
    s = await Scenario.create({ name: 'two-workers', env: FAST_ENV });
    await s.startApi();
    await s.createWorkspace(2);
    // Slower answers than elsewhere: more attempts are in flight when the worker dies.
    await s.registerHealthyWebhooks(10, 40);
    await s.startWorker();
    const doomed = await s.startWorker();

    const n = LOAD.submissions;
    const stream = s.stream(n);
    await stream.reached(Math.floor(n * 0.4));
    await doomed.kill('SIGKILL');
    const results = await stream.done;
    expect(s.workers.filter((w) => w.alive)).toHaveLength(1);

    await settleCheckAndReport(s, {
      scenario: SCENARIO,
      file: 'test/faults/two-workers.faults-spec.ts',
      injected:
        'two workers; the second killed with SIGKILL at 40% of the stream, holding jobs, Postgres locks and in-flight slots, and never restarted',
      results,
      extra: { workerKills: 1 },
    });
  });
});
