import { settleCheckAndReport } from './support/end-state.js';
import { sleep } from './support/ports.js';
import { FAST_ENV, LOAD, Scenario } from './support/scenario.js';

const SCENARIO = 'worker SIGKILL mid-stream, restarted; webhook DELETE mid-stream';

describe(`fault: ${SCENARIO}`, () => {
  let s: Scenario | undefined;
  afterAll(() => s?.cleanup());

  it('delivers every accepted submission at least once and nothing after DELETE returned', async () => {
    s = await Scenario.create({ name: 'worker-kill', env: FAST_ENV });
    await s.startApi();
    await s.createWorkspace(2);
    const [calcA, calcB] = s.calculatorIds;
    const slow = () => ({ status: 200, delayMs: 5 + Math.floor(Math.random() * 20) });
    const hooks = [
      await s.registerWebhook('a', await s.startReceiver('a', slow), [calcA]),
      await s.registerWebhook('b', await s.startReceiver('b', slow), [calcA, calcB]),
      await s.registerWebhook('c', await s.startReceiver('c', slow), [calcA, calcB]),
      await s.registerWebhook('d', await s.startReceiver('d', slow), [calcB]),
    ];
    let worker = await s.startWorker();

    const n = LOAD.submissions;
    const stream = s.stream(n);
    await stream.reached(Math.floor(n * 0.25));
    await worker.kill('SIGKILL');
    await sleep(1000);
    worker = await s.startWorker();
    await stream.reached(Math.floor(n * 0.5));
    const removal = await s.removeWebhook(hooks[3]);
    await stream.reached(Math.floor(n * 0.7));
    await worker.kill('SIGKILL');
    await s.startWorker();
    const results = await stream.done;

    await settleCheckAndReport(s, {
      scenario: SCENARIO,
      file: 'test/faults/worker-kill.faults-spec.ts',
      injected:
        'the only worker killed with SIGKILL at 25% of the stream (restarted 1 s later) and again at 70% (restarted at once); webhook d removed with DELETE at 50%',
      results,
      extra: { workerKills: 2, deleteMs: removal.returnedAt - removal.startedAt },
    });
  });
});
