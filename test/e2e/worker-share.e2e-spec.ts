import { setupWebhook, submit, useFastDeliveryApp } from '../support/delivery.js';
import { expectNothingFor, waitFor } from '../support/receiver.js';
import { databaseSession } from '../support/test-app.js';

// Eight sockets: one workspace alone may hold six of them (all but a quarter) with attempts before their answer.
describe('a workspace’s share of its worker', () => {
  const env = useFastDeliveryApp({ WORKER_CONCURRENCY: '8', DATABASE_LOCK_TIMEOUT_MS: '20000' });

  it('is held until the receiver answers, not while the attempt is recorded', async () => {
    const t = env.t;
    const receiver = await env.startReceiver();
    const { api, calculator, webhook } = await setupWebhook(t, receiver.url);
    const holder = await databaseSession(t);
    try {
      // Each record of this webhook waits for its row (it folds the outcome into the webhook's health).
      // NO KEY UPDATE: the submissions' foreign-key checks still pass.
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM webhooks WHERE id = $1 FOR NO KEY UPDATE', [webhook.id]);
      for (let i = 0; i < 10; i++) await submit(api, calculator.id);
      // Answered attempts hold no socket while recording: all ten are sent while their records wait (with
      // the share held to the record, six; with the socket, eight).
      await waitFor(() => receiver.requests.length === 10, 10_000, 'ten sends while their records wait');
      const [{ recorded }] = await t.dataSource.query(
        `SELECT count(*)::int AS recorded FROM deliveries WHERE webhook_id = $1 AND attempt_count > 0`,
        [webhook.id],
      );
      expect(recorded).toBe(0);
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
    await waitFor(
      async () => {
        const [{ succeeded }] = await t.dataSource.query(
          `SELECT count(*)::int AS succeeded FROM deliveries
           WHERE webhook_id = $1 AND status = 'succeeded' AND attempt_count = 1`,
          [webhook.id],
        );
        return succeeded === 10;
      },
      10_000,
      'the ten records once the row is free',
    );
    await expectNothingFor(500, 'an eleventh send', () => receiver.requests.length > 10);
  }, 40_000);
});
