import { Receiver, waitFor } from '../support/receiver.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

describe('Postgres while a receiver holds the request', () => {
  let t: TestApp;
  let receiver: Receiver;
  beforeAll(async () => {
    t = await createTestApp({
      WORKER_ENABLED: 'true',
      WORKER_CONCURRENCY: '4',
      DELIVERY_TIMEOUT_MS: '3000',
      DELIVERY_RETRY_SCHEDULE: '100ms,100ms,100ms',
      SWEEP_INTERVAL_MS: '200',
    });
    // The first request is held long enough to look at Postgres and kill connections under it.
    receiver = await Receiver.start((_request, index) => ({ status: 200, delayMs: index === 0 ? 800 : 0 }));
  });
  afterAll(async () => {
    await receiver.close();
    await t.close();
  });

  it('holds no transaction, and survives every connection being killed, recording the attempt', async () => {
    const { workspace, key } = await createWorkspace(t);
    const calc = await createCalculator(t, workspace.id);
    const api = (method: 'post', path: string) => t.http()[method](`/api/v1${path}`).set('x-ac-api-key', key);
    await api('post', '/webhooks')
      .send({ url: receiver.url, calculators: [calc.id] })
      .expect(200);
    await api('post', `/calculators/${calc.id}/submissions`)
      .send({ data: { a: 1 } })
      .expect(200);
    await waitFor(() => receiver.requests.length === 1, 5_000, 'the first attempt');

    const inTransaction: unknown[] = await t.dataSource.query(
      `SELECT pid FROM pg_stat_activity
       WHERE datname = current_database() AND state LIKE 'idle in transaction%' AND pid <> pg_backend_pid()`,
    );
    expect(inTransaction).toEqual([]);
    // A crash of every pooled connection while the receiver thinks: nothing of the attempt lived on them.
    const killed: unknown[] = await t.dataSource.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
       WHERE datname = current_database() AND pid <> pg_backend_pid()`,
    );
    expect(killed.length).toBeGreaterThan(0);

    const [delivery] = await waitFor(
      async () => {
        const rows: { status: string; attempt_count: number }[] = await t.dataSource.query(
          `SELECT status, attempt_count FROM deliveries WHERE status <> 'pending'`,
        );
        return rows.length > 0 ? rows : null;
      },
      10_000,
      'the delivery to end',
    );
    expect(delivery.status).toBe('succeeded');
    // At least once: if the record had to be retried, the receiver saw the same webhook-id again.
    expect(new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size).toBe(1);
  });
});
