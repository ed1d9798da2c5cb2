import { createTestApp, type TestApp } from '../support/test-app.js';

// A fixed-size pool (PoolWarmer): a burst of requests finds every connection open, none opened on demand.
describe('the connection pool', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ DATABASE_POOL_SIZE: '4' });
  });
  afterAll(() => t.close());

  it('opens all its connections at start, before any request needs them', async () => {
    const database = new URL(t.config.databaseUrl).pathname.slice(1);
    const [{ n }] = (await t.dataSource.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'calc-webhooks'`,
      [database],
    )) as { n: number }[];
    expect(n).toBe(4);
  });
});
