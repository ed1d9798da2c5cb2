import {
  connectionOf,
  type PooledConnection,
  queryPreparedOn,
  type PreparedStatement,
} from '../../src/core/database/prepared.js';
import {
  OLDEST_PENDING_AGE,
  RELEASE_LEASE,
  RETRY_PENDING_NOW,
  WEBHOOK_REMOVE,
} from '../../src/delivery/store/delivery-statements.js';
import { deliveryReads, insertDeliveries, ownerOf } from '../support/delivery-rows.js';
import { setupWebhook, submit } from '../support/delivery.js';
import { createTestApp, type TestApp } from '../support/test-app.js';

// Rows a statement must not read to find what it looks for: a host's backlog, a webhook's history.
const ROWS = 1_500;
const HOUR = 3_600_000;

/**
 * Statements run on a connection whose plans were made while the partitions were empty and known to be
 * (analyzed, as the bench's are at its start and as a new week's partition may be), as an api's are at
 * its start: Postgres keeps such a connection's generic plan after five runs, and a plain statement's
 * plan then reads every row of a partition that has since filled. Each of these is a store function
 * with the SET clauses (attempt-claims checks them), so its plan reads an index whatever it was made on,
 * or a rare statement planned on each run.
 */
describe('store statements planned on empty partitions', () => {
  let t: TestApp;
  let connection: PooledConnection;
  const run = <T extends object>(statement: PreparedStatement, values: unknown[]) =>
    queryPreparedOn<T & Record<string, unknown>>(connection.client, statement, values);

  /** What `work` read of the deliveries' partitions and their indexes, in a transaction rolled back. */
  async function readsOf(work: () => Promise<unknown>): Promise<number> {
    await connection.client.query('BEGIN');
    try {
      const before = await deliveryReads(connection.client);
      await work();
      return (await deliveryReads(connection.client)) - before;
    } finally {
      await connection.client.query('ROLLBACK');
    }
  }

  beforeAll(async () => {
    // No in-process worker: the deliveries stay as the tests write them.
    t = await createTestApp();
    await t.dataSource.query('ANALYZE deliveries');
    connection = await connectionOf(t.dataSource);
    for (let i = 0; i < 6; i += 1) {
      expect(await run<{ age: number }>(OLDEST_PENDING_AGE, [])).toEqual([{ age: 0 }]);
      expect(await run(WEBHOOK_REMOVE, ['nosuchwebhook', 'nosuchworkspace', new Date()])).toEqual([]);
      await run(RELEASE_LEASE, ['nosuchdelivery', new Date()]);
      expect(await run(RETRY_PENDING_NOW, ['nosuchdelivery', new Date(), new Date()])).toEqual([]);
    }
  });
  afterAll(async () => {
    connection.release();
    await t.close();
  });

  // /metrics reads it on every scrape: the first entry of the pending index, whatever the backlog.
  it('the oldest pending age reads the first pending entry, never the backlog', async () => {
    const setup = await setupWebhook(t, 'https://oldest.example.com/hook');
    const owner = ownerOf(setup, await submit(setup.api, setup.calculator.id));
    const dueAt = new Date(Date.now() - 3 * HOUR);
    await insertDeliveries(
      t,
      owner,
      Array.from({ length: ROWS }, () => ({ status: 'pending' as const, createdAt: dueAt, dueAt })),
    );
    let age = 0;
    const read = await readsOf(async () => ([{ age }] = await run<{ age: number }>(OLDEST_PENDING_AGE, [])));
    expect(age).toBeGreaterThanOrEqual(3 * 3_600);
    expect(read).toBeLessThan(ROWS);
  });

  // DELETE ends the webhook's pending deliveries at its host, however many it has sent before.
  it('a webhook’s DELETE reads its pending deliveries, not its history nor the partition', async () => {
    const setup = await setupWebhook(t, 'https://removed.example.com/hook');
    const owner = ownerOf(setup, await submit(setup.api, setup.calculator.id));
    const now = new Date();
    await insertDeliveries(t, owner, [
      ...Array.from({ length: ROWS }, () => ({ status: 'succeeded' as const, createdAt: now })),
      ...Array.from({ length: 3 }, () => ({ status: 'pending' as const, createdAt: now })),
    ]);
    let ended: unknown;
    const read = await readsOf(async () => {
      [{ ended }] = await run<{ ended: number }>(WEBHOOK_REMOVE, [setup.webhook.id, setup.workspace.id, new Date()]);
    });
    // The 3 inserted and the submission's own delivery.
    expect(ended).toBe(4);
    expect(read).toBeLessThan(ROWS);
  });

  // A lease given back (a kept-alive connection found closed) and a retry made by hand find one delivery.
  it('a lease given back and a retry of a pending delivery read that delivery, not the partition', async () => {
    const setup = await setupWebhook(t, 'https://bykey.example.com/hook');
    const owner = ownerOf(setup, await submit(setup.api, setup.calculator.id));
    const now = new Date();
    const ids = await insertDeliveries(
      t,
      owner,
      Array.from({ length: ROWS }, () => ({ status: 'pending' as const, createdAt: now })),
    );
    expect(await readsOf(() => run(RELEASE_LEASE, [ids[7], now]))).toBeLessThan(10);
    let retried: unknown[] = [];
    const read = await readsOf(async () => (retried = await run(RETRY_PENDING_NOW, [ids[8], new Date(), now])));
    expect(retried).toEqual([{ max_attempts: 8, host: 'bykey.example.com' }]);
    expect(read).toBeLessThan(10);
  });
});
