import { countRows, submit } from '../support/delivery.js';
import { client, registerWebhook, type Client } from '../support/management-api.js';
import {
  createCalculator,
  createTestApp,
  createWorkspace,
  databaseSession,
  type TestApp,
} from '../support/test-app.js';

const RECEIVER = 'https://receiver.example.com/hook';

interface Counters {
  submissionsCount: number;
  lastSubmissionAt: string | null;
}

async function countersOf(api: Client): Promise<Map<string, Counters>> {
  const res = await api.get('/calculators?limit=100');
  expect(res.status).toBe(200);
  const rows = res.body.data as ({ id: string } & Counters)[];
  return new Map(
    rows.map((c) => [c.id, { submissionsCount: c.submissionsCount, lastSubmissionAt: c.lastSubmissionAt }]),
  );
}

const latest = (timestamps: string[]): string => timestamps.reduce((a, b) => (Date.parse(a) >= Date.parse(b) ? a : b));

// Submissions to one calculator share its row and bump one counter shard each (SUBMISSION_WITH_OUTBOX).
describe('submission counters of a hot calculator', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const setup = async (calculators = 1) => {
    const { workspace, key } = await createWorkspace(t);
    const api = client(t, key);
    const created = [];
    for (let i = 0; i < calculators; i += 1) created.push(await createCalculator(t, workspace.id, `Calc ${i}`));
    return { workspace, api, calculators: created };
  };

  it('counts 200 concurrent submissions to one calculator exactly, spread over several shards', async () => {
    const { api, calculators } = await setup();
    const [calculator] = calculators;
    const submissions = await Promise.all(Array.from({ length: 200 }, () => submit(api, calculator.id)));

    expect((await countersOf(api)).get(calculator.id)).toEqual({
      submissionsCount: 200,
      lastSubmissionAt: latest(submissions.map((s) => s.createdAt)),
    });
    const shards = await t.dataSource.query<{ shard: number }[]>(
      `SELECT shard FROM calculator_submission_counters WHERE calculator_id = $1`,
      [calculator.id],
    );
    expect(shards.length).toBeGreaterThan(1);
    expect(shards.every(({ shard }) => shard >= 0 && shard < 16)).toBe(true);
  });

  it('does not wait for a submission that holds the calculator and its shards', async () => {
    const { api, calculators } = await setup();
    const [calculator] = calculators;
    await submit(api, calculator.id);
    const holder = await databaseSession(t);
    try {
      // What a submission in flight holds: the calculator row shared, every existing shard exclusively.
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM calculators WHERE id = $1 FOR SHARE`, [calculator.id]);
      await holder.query(`SELECT 1 FROM calculator_submission_counters WHERE calculator_id = $1 FOR UPDATE`, [
        calculator.id,
      ]);
      const started = Date.now();
      const second = await submit(api, calculator.id);
      expect(Date.now() - started).toBeLessThan(2000);
      await holder.query('COMMIT');
      expect((await countersOf(api)).get(calculator.id)).toEqual({
        submissionsCount: 2,
        lastSubmissionAt: second.createdAt,
      });
    } finally {
      await holder.end();
    }
  });

  it('keeps each calculator’s count apart under concurrent submissions to several', async () => {
    const { api, calculators } = await setup(3);
    const perCalculator = [30, 45, 60];
    const jobs = calculators.flatMap((c, i) => Array.from({ length: perCalculator[i] }, () => c.id));
    const submissions = await Promise.all(jobs.map((id) => submit(api, id)));

    const counters = await countersOf(api);
    calculators.forEach((c, i) => {
      const own = submissions.filter((s) => s.calculatorId === c.id).map((s) => s.createdAt);
      expect(counters.get(c.id)).toEqual({ submissionsCount: perCalculator[i], lastSubmissionAt: latest(own) });
    });
  });

  it('sums each calculator’s own shards on every page of GET /calculators', async () => {
    const { api, calculators } = await setup(3);
    const perCalculator = [3, 1, 2];
    for (const [i, c] of calculators.entries()) {
      await Promise.all(Array.from({ length: perCalculator[i] }, () => submit(api, c.id)));
    }
    const pages = await Promise.all([0, 1, 2].map((offset) => api.get(`/calculators?limit=1&offset=${offset}`)));

    const listed = pages.flatMap((res) => res.body.data as { id: string; submissionsCount: number }[]);
    expect(listed.map((c) => c.id).sort()).toEqual(calculators.map((c) => c.id).sort());
    const expected = new Map(calculators.map((c, i) => [c.id, perCalculator[i]]));
    expect(listed.map((c) => c.submissionsCount)).toEqual(listed.map((c) => expected.get(c.id)));
  });

  it('never deadlocks: concurrent submissions to two calculators bound to the same webhooks', async () => {
    const { workspace, api, calculators } = await setup(2);
    const ids = calculators.map((c) => c.id);
    for (let i = 0; i < 2; i += 1) await registerWebhook(api, { url: `${RECEIVER}/${i}`, calculators: ids });
    const results = await Promise.all(
      Array.from({ length: 160 }, (_, i) => api.post(`/calculators/${ids[i % 2]}/submissions`, { data: { i } })),
    );

    expect(results.filter((r) => r.status !== 200).map((r) => r.status)).toEqual([]);
    const counters = await countersOf(api);
    expect(ids.map((id) => counters.get(id)?.submissionsCount)).toEqual([80, 80]);
    expect(await countRows(t, 'deliveries', workspace.id)).toBe(160 * 2);
  });
});
