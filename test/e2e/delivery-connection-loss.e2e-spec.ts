import { Receiver, waitFor } from '../support/receiver.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

describe('an attempt whose Postgres connection dies while it sends', () => {
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
    // The first request is held long enough to kill the attempt's connection under it.
    receiver = await Receiver.start((_request, index) => ({ status: 200, delayMs: index === 0 ? 800 : 0 }));
  });
  afterAll(async () => {
    await receiver.close();
    await t.close();
  });

  it('leaves the worker running and delivers again, with the same webhook-id', async () => {
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

    // The attempt's transaction waits, idle, for the receiver's answer: end its backend as a crash would.
    const killed: unknown[] = await t.dataSource.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
       WHERE datname = current_database() AND state = 'idle in transaction' AND pid <> pg_backend_pid()`,
    );
    expect(killed).toHaveLength(1);

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
    // The killed attempt was never recorded: the one that succeeded is attempt 1, sent a second time.
    expect(delivery).toEqual({ status: 'succeeded', attempt_count: 1 });
    expect(receiver.requests).toHaveLength(2);
    expect(receiver.requests[1].headers['webhook-id']).toBe(receiver.requests[0].headers['webhook-id']);
  });
});
