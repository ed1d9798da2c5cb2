import { settleCheckAndReport } from './support/end-state.js';
import { sleep, waitUntil } from './support/ports.js';
import { FAST_ENV, LOAD, Scenario } from './support/scenario.js';
import type { SubmissionResult } from './support/submission-stream.js';

const SCENARIO = 'Postgres restarted mid-stream';
const CLIENT_TIMEOUT_MS = 5000;

describe(`fault: ${SCENARIO}`, () => {
  let s: Scenario | undefined;
  afterAll(() => s?.cleanup());

  it('the api answers 503 while Postgres is down, recovers by itself, and every accepted submission is delivered', async () => {
    s = await Scenario.create({ name: 'postgres-restart', privatePostgres: true, env: FAST_ENV });
    const scenario = s;
    await s.startApi();
    await s.createWorkspace(2);
    const [calcA] = s.calculatorIds;
    await s.registerHealthyWebhooks();
    await s.startWorker();
    await s.startWorker();
    const apiPid = s.api!.child.pid;

    // A probe is a submission like the stream's, numbered apart, with its answer's error code kept.
    const probes: (SubmissionResult & { code?: string })[] = [];
    const probe = async (): Promise<SubmissionResult & { code?: string }> => {
      const n = 1_000_000 + probes.length;
      const result: SubmissionResult & { code?: string } = {
        n,
        calculatorId: calcA,
        startedAt: Date.now(),
        endedAt: 0,
        outcome: 'error',
      };
      probes.push(result);
      try {
        const res = await scenario.call(
          'POST',
          `/api/v1/calculators/${calcA}/submissions`,
          { data: { n } },
          CLIENT_TIMEOUT_MS,
        );
        result.outcome = res.status;
        const body = res.body as { data?: { id: string }; error?: { code: string } };
        if (res.status === 200) result.submissionId = body.data!.id;
        else result.code = body.error?.code;
      } catch (error) {
        result.outcome = (error as Error).name === 'TimeoutError' ? 'timeout' : 'error';
        result.detail = (error as Error).message;
      }
      result.endedAt = Date.now();
      return result;
    };

    const n = LOAD.submissions;
    const stream = s.stream(n, { clientTimeoutMs: CLIENT_TIMEOUT_MS });
    await stream.reached(Math.floor(n * 0.4));
    const downAt = Date.now();
    await s.postgres!.stop();
    const stoppedAt = Date.now();
    const whileDown: typeof probes = [];
    while (Date.now() - stoppedAt < 5000) {
      whileDown.push(await probe());
      await sleep(200);
    }
    await s.postgres!.start();
    const startedAt = Date.now();
    const recovered = await waitUntil(
      async () => ((await probe()).outcome === 200 ? Date.now() : 0),
      30_000,
      'the api to accept a submission again after Postgres started',
      250,
    );
    const results = await stream.done;

    const probeOutcomes: Record<string, number> = {};
    for (const p of whileDown) {
      const key = `${p.outcome}${p.code ? ` ${p.code}` : ''}`;
      probeOutcomes[key] = (probeOutcomes[key] ?? 0) + 1;
    }
    const broken = whileDown
      .filter((p) => p.outcome !== 503 || p.code !== 'unavailable')
      .map(
        (p) =>
          `probe while Postgres was down: ${p.outcome} ${p.code ?? p.detail ?? ''} after ${p.endedAt - p.startedAt} ms`,
      );
    if (whileDown.length < 5) broken.push(`only ${whileDown.length} probes while Postgres was down`);
    if (!s.api!.alive || s.api!.child.pid !== apiPid) broken.push('the api process did not survive');
    await settleCheckAndReport(s, {
      scenario: SCENARIO,
      file: 'test/faults/postgres-restart.faults-spec.ts',
      injected:
        'private Postgres stopped with `pg_ctl stop -m immediate` (every backend killed, as in a crash) at 40% of the stream, probed for 5 s, then started again (crash recovery); the api and two workers keep running',
      results: [...results, ...probes],
      extraFailures: broken,
      extra: {
        postgresDownMs: startedAt - downAt,
        probesWhileDown: probeOutcomes,
        apiRecoveredAfterMs: recovered - startedAt,
      },
    });
  });
});
