import { DatabaseLock } from '../../src/core/database/database-lock.js';
import { setupWebhook, submit, useFastDeliveryApp, waitForEndedDelivery } from '../support/delivery.js';
import { waitFor } from '../support/receiver.js';
import { databaseSession } from '../support/test-app.js';

// The worker's statements run under the same DATABASE_LOCK_TIMEOUT_MS as the api's: a claim that
// cannot get its webhook's lock in time fails as an infrastructure error, costs no attempt, its host's
// drain picks the delivery again, and the delivery is still made, once, with no lock left behind on a
// pooled connection.
describe('a delivery whose claim times out waiting for its lock', () => {
  // The send's own timeout is not under test: at the fast suite's 1 s, a loaded machine can time out
  // the send itself and make the one delivery two attempts.
  const lines: string[] = [];
  const env = useFastDeliveryApp({ DELIVERY_TIMEOUT_MS: '10000', LOG_LEVEL: 'warn' }, lines);

  it('is claimed again and delivered once the lock is free, with no attempt spent on the timeout', async () => {
    const t = env.t;
    const receiver = await env.startReceiver();
    const { api, calculator, webhook } = await setupWebhook(t, receiver.url);
    const holder = await databaseSession(t);
    try {
      // The removal lock of that webhook, as DELETE takes it.
      await holder.query('SELECT pg_advisory_lock($1, hashtext($2))', [DatabaseLock.WebhookFence, webhook.id]);
      const { id: submissionId } = await submit(api, calculator.id);
      const [{ id: deliveryId }] = await t.dataSource.query('SELECT id FROM deliveries WHERE submission_id = $1', [
        submissionId,
      ]);
      // The first claim has timed out: the drain logged it, and nothing was sent or recorded.
      await waitFor(
        () =>
          lines.some((line) => {
            const entry = JSON.parse(line) as { msg?: string; deliveryId?: string };
            return entry.deliveryId === deliveryId && /failed before it was recorded/.test(entry.msg ?? '');
          }),
        t.config.databaseTimeouts.lockMs + 10_000,
        'the first claim to time out',
      );
      const [row] = await t.dataSource.query('SELECT attempt_count, lease_until FROM deliveries WHERE id = $1', [
        deliveryId,
      ]);
      expect(row).toEqual({ attempt_count: 0, lease_until: null });
      expect(receiver.requests).toHaveLength(0);
      await holder.query('SELECT pg_advisory_unlock_all()');
    } finally {
      await holder.end();
    }
    await waitFor(() => receiver.requests.length === 1, 15_000, 'the retried delivery');
    const delivery = await waitForEndedDelivery(api, webhook.id);
    expect(delivery).toMatchObject({ status: 'succeeded', attemptCount: 1 });
    expect(receiver.requests).toHaveLength(1);
    // No pooled connection kept a shared lock: removal (an exclusive lock) answers at once.
    await api.delete(`/webhooks/${webhook.id}`).expect(200);
  }, 40_000);
});
