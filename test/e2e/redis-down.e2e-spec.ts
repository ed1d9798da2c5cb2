import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

// Redis unreachable: the api still accepts submissions (Postgres is the source of truth) and
// answers quickly; the sweeper wakes the deliveries' hosts once Redis is back.
describe('POST submissions while Redis is unreachable', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ REDIS_URL: 'redis://127.0.0.1:1' });
  });
  afterAll(() => t.close());

  it('accepts the submission, records its delivery as pending, and answers within a few seconds', async () => {
    const { workspace, key } = await createWorkspace(t);
    const calc = await createCalculator(t, workspace.id);
    await t
      .http()
      .post('/api/v1/webhooks')
      .set('x-ac-api-key', key)
      .send({ url: 'https://receiver.example.com/hook', calculators: [calc.id] })
      .expect(200);
    const started = Date.now();
    const res = await t
      .http()
      .post(`/api/v1/calculators/${calc.id}/submissions`)
      .set('x-ac-api-key', key)
      .send({ data: { a: 1 } })
      .expect(200);
    expect(Date.now() - started).toBeLessThan(10_000); // a hang check, not a speed goal
    const rows = await t.dataSource.query('SELECT status FROM deliveries WHERE submission_id = $1', [res.body.data.id]);
    expect(rows).toEqual([{ status: 'pending' }]);
  });
});
