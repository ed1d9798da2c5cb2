import type pg from 'pg';
import { client, expectError } from '../support/management-api.js';
import {
  createCalculator,
  createTestApp,
  createWorkspace,
  databaseSession,
  type TestApp,
} from '../support/test-app.js';

// With a table locked (maintenance, a stuck migration), requests fail fast with 503 instead of
// waiting for the lock: DATABASE_LOCK_TIMEOUT_MS (default 2 s) cancels the statement.
describe('requests while a table is locked', () => {
  let t: TestApp;
  let locker: pg.Client;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  beforeEach(async () => {
    locker = await databaseSession(t);
  });
  afterEach(async () => {
    await locker.query('ROLLBACK').catch(() => undefined);
    await locker.end();
  });

  const lockWebhooks = async () => {
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE webhooks IN ACCESS EXCLUSIVE MODE');
  };

  it('GET /webhooks answers 503 unavailable within the lock timeout, then 200 once the lock is gone', async () => {
    const { key } = await createWorkspace(t);
    const api = client(t, key);
    await api.get('/webhooks').expect(200); // the key is known before the table is locked
    await lockWebhooks();
    const started = Date.now();
    const res = await api.get('/webhooks');
    expectError(res, 503, 'unavailable');
    expect(Date.now() - started).toBeLessThan(4_000);
    await locker.query('ROLLBACK');
    await api.get('/webhooks').expect(200);
  });

  it('POST submissions answers 503 unavailable within the lock timeout and records nothing', async () => {
    const { workspace, key } = await createWorkspace(t);
    const calc = await createCalculator(t, workspace.id);
    const api = client(t, key);
    await api.get('/me').expect(200);
    await lockWebhooks();
    const started = Date.now();
    const res = await api.post(`/calculators/${calc.id}/submissions`, { data: { a: 1 } });
    expectError(res, 503, 'unavailable');
    expect(Date.now() - started).toBeLessThan(4_000);
    await locker.query('ROLLBACK');
    const rows = await t.dataSource.query('SELECT count(*)::int AS n FROM submissions WHERE calculator_id = $1', [
      calc.id,
    ]);
    expect(rows).toEqual([{ n: 0 }]);
  });

  it('a statement running longer than DATABASE_STATEMENT_TIMEOUT_MS is cancelled', async () => {
    await expect(t.dataSource.query('SELECT pg_sleep(10)')).rejects.toMatchObject({
      driverError: expect.objectContaining({ code: '57014' }),
    });
  }, 15_000);
});
