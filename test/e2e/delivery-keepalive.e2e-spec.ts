import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DatabaseLock } from '../../src/core/database/database-lock.js';
import { setupWebhook, submit, useFastDeliveryApp } from '../support/delivery.js';
import { waitFor } from '../support/receiver.js';
import { databaseSession } from '../support/test-app.js';

// A kept-alive connection the receiver closes while the claim waits (here for the webhook's lock) has
// sent nothing: that is no attempt, and the delivery goes out at once on a new connection.
describe('a kept-alive connection closed while its claim waits', () => {
  const env = useFastDeliveryApp({ DATABASE_LOCK_TIMEOUT_MS: '20000' });

  it('is not an attempt: the delivery is sent on a new connection, its first attempt succeeding', async () => {
    const t = env.t;
    const bodies: string[] = [];
    let closed = 0;
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk));
      req.on('end', () => {
        bodies.push(body);
        res.end('ok');
      });
    });
    server.on('connection', (socket) => socket.on('close', () => closed++));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const holder = await databaseSession(t);
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      const { api, calculator, webhook } = await setupWebhook(t, url);
      await submit(api, calculator.id);
      await waitFor(() => bodies.length === 1, 10_000, 'the first delivery');
      // The worker keeps that connection; its next claim waits for the webhook's lock, as behind a DELETE.
      await holder.query('SELECT pg_advisory_lock($1, hashtext($2))', [DatabaseLock.WebhookFence, webhook.id]);
      const { id: submissionId } = await submit(api, calculator.id);
      await waitFor(
        async () =>
          (
            await t.dataSource.query(
              `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND NOT granted`,
              [DatabaseLock.WebhookFence],
            )
          ).length > 0,
        10_000,
        'the claim to wait for the lock',
      );
      server.closeIdleConnections(); // as its idle timeout would
      await waitFor(() => closed >= 1, 10_000, 'the receiver to close the kept-alive connection');
      await holder.query('SELECT pg_advisory_unlock_all()');

      const [{ id: deliveryId }] = await t.dataSource.query('SELECT id FROM deliveries WHERE submission_id = $1', [
        submissionId,
      ]);
      const delivery = await waitFor(
        async () => {
          const res = await api.get(`/webhooks/${webhook.id}/deliveries/${deliveryId}`);
          return res.body.data.status === 'pending' ? null : res.body.data;
        },
        10_000,
        'the second delivery to end',
      );
      expect(delivery).toMatchObject({ status: 'succeeded', attemptCount: 1 });
      const attempts = await t.dataSource.query('SELECT succeeded FROM delivery_attempts WHERE delivery_id = $1', [
        deliveryId,
      ]);
      expect(attempts).toEqual([{ succeeded: true }]);
      expect(bodies).toHaveLength(2);
    } finally {
      await holder.end();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 60_000);
});
