import { settleCheckAndReport } from './support/end-state.js';
import { sleep } from './support/ports.js';
import { FAST_ENV, LOAD, Scenario } from './support/scenario.js';

const SCENARIO = 'Redis restarted empty mid-stream';

describe(`fault: ${SCENARIO}`, () => {
  let s: Scenario | undefined;
  afterAll(() => s?.cleanup());

  it('the sweeper re-enqueues every delivery whose job was lost; nothing is lost', async () => {
    s = await Scenario.create({ name: 'redis-restart', privateRedis: true, env: FAST_ENV });
    await s.startApi();
    await s.createWorkspace(2);
    await s.registerHealthyWebhooks();
    // Every delivery to d fails its first attempt: retries are waiting in Redis when it goes.
    const failsOnce = await s.startReceiver('d', ({ attempt }) => ({ status: attempt === 1 ? 500 : 200 }));
    await s.registerWebhook('d', failsOnce, s.calculatorIds);
    await s.startWorker();
    await s.startWorker();

    const n = LOAD.submissions;
    const stream = s.stream(n);
    await stream.reached(Math.floor(n * 0.4));
    const downAt = Date.now();
    await s.redis!.kill();
    await sleep(2000);
    await s.redis!.start();
    const redisDownMs = Date.now() - downAt;
    const { rows } = await s.db.query(`SELECT count(*)::int AS n FROM deliveries WHERE status = 'pending'`);
    const results = await stream.done;

    await settleCheckAndReport(s, {
      scenario: SCENARIO,
      file: 'test/faults/redis-restart.faults-spec.ts',
      injected:
        'private Redis (no persistence) killed with SIGKILL at 40% of the stream and started again empty 2 s later, under two workers; every job, delayed retry and in-flight slot is gone',
      results,
      extra: { redisDownMs, pendingWhenRedisCameBack: rows[0].n },
    });
  });
});
