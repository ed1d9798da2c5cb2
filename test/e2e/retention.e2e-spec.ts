import { createId } from '@paralleldrive/cuid2';
import { insertDeliveries, ownerOf, type DeliveryOwner, type DeliveryRow } from '../support/delivery-rows.js';
import { FAST_DELIVERY, setupWebhook, submit } from '../support/delivery.js';
import { expectBadRequest, expectJson } from '../support/management-api.js';
import { Receiver, waitFor } from '../support/receiver.js';
import { createTestApp, type TestApp } from '../support/test-app.js';

// Rows are placed a MARGIN away from the retention's edge on either side: no test runs for 10 minutes,
// so no timing can move a row across it. Old rows go ten days back, before the partitions the migration
// made (this week's and the next), into partitions of an hour each (DELIVERY_PARTITION_INTERVAL).
const HOUR_MS = 3_600_000;
const RETENTION_MS = HOUR_MS;
const MARGIN_MS = 600_000;
const ago = (ms: number) => new Date(Date.now() - ms);
const LONG_AGO_MS = 10 * 24 * HOUR_MS;

describe('retention (DELIVERY_RETENTION=1h, DELIVERY_PARTITION_INTERVAL=1h)', () => {
  let t: TestApp;
  let receiver: Receiver;
  // Each test takes hours of its own, ten days back, so no two share a partition.
  let nextSlot = Math.floor((Date.now() - LONG_AGO_MS) / HOUR_MS) * HOUR_MS;
  const slot = () => {
    nextSlot += HOUR_MS;
    return (minutes: number) => new Date(nextSlot + minutes * 60_000);
  };

  beforeAll(async () => {
    t = await createTestApp({
      ...FAST_DELIVERY,
      DELIVERY_RETENTION: '1h',
      DELIVERY_PARTITION_INTERVAL: '1h',
      DELIVERY_PARTITIONS_AHEAD: '1h',
    });
    receiver = await Receiver.start(() => ({ status: 200 }));
  });
  afterAll(async () => {
    await receiver.close();
    await t.close();
  });

  const query = <T>(sql: string, params: unknown[] = []) => t.dataSource.query(sql, params) as Promise<T[]>;
  const existing = async (ids: string[]) =>
    (await query<{ id: string }>(`SELECT id FROM deliveries WHERE id = ANY($1)`, [ids])).map((r) => r.id);
  const attemptsOf = async (ids: string[]) =>
    (
      await query<{ n: number }>(`SELECT count(*)::int AS n FROM delivery_attempts WHERE delivery_id = ANY($1)`, [ids])
    )[0].n;
  /** The partition holding the delivery, or null when it is gone. */
  const partitionOf = async (id: string) =>
    (await query<{ name: string }>(`SELECT tableoid::regclass::text AS name FROM deliveries WHERE id = $1`, [id]))[0]
      ?.name ?? null;
  const tableExists = async (name: string) =>
    (await query<{ found: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS found`, [name]))[0].found;

  async function withAttempts(owner: DeliveryOwner, rows: DeliveryRow[]): Promise<string[]> {
    const ids = await insertDeliveries(t, owner, rows);
    await query(
      `INSERT INTO delivery_attempts (delivery_id, delivery_created_at, attempt_number, trigger, started_at,
                                      duration_ms, succeeded)
       SELECT d.id, d.created_at, 1, 'scheduled', d.created_at, 5, true FROM deliveries d WHERE d.id = ANY($1)`,
      [ids],
    );
    return ids;
  }

  /**
   * Waits for a retention pass that began after this call: a sentinel partition, all of it ended long
   * ago, must go. Every pass looks at every partition, so partitions still there were kept by a pass.
   */
  async function afterAPass(owner: DeliveryOwner) {
    const [sentinel] = await insertDeliveries(t, owner, [{ status: 'succeeded', createdAt: slot()(0) }]);
    await waitFor(async () => (await existing([sentinel])).length === 0, 20_000, 'a pass to drop the sentinel');
  }

  /** A webhook with one delivered submission, and the owner for rows inserted beside it. */
  async function delivered() {
    const setup = await setupWebhook(t, receiver.url);
    const submission = await submit(setup.api, setup.calculator.id);
    await waitFor(async () => {
      const rows = await query(`SELECT id FROM deliveries WHERE submission_id = $1 AND status = 'succeeded'`, [
        submission.id,
      ]);
      return rows.length === 1;
    });
    return { ...setup, submission, owner: ownerOf(setup, submission) };
  }

  it('drops a partition once none of its deliveries is pending or ended within the retention, attempts too', async () => {
    const { owner, submission, workspace } = await delivered();
    const gone = slot();
    // `guard` (pending) keeps the old partition until every row is in; then it ends long ago.
    const [guard, ...old] = await withAttempts(owner, [
      { status: 'pending', createdAt: gone(0) },
      ...Array.from({ length: 2_500 }, (_, i) => ({ status: 'succeeded' as const, createdAt: gone(i % 60) })),
      { status: 'failed', createdAt: gone(1) },
      { status: 'cancelled', createdAt: gone(2) },
      { status: 'skipped', createdAt: gone(3), completedAt: ago(RETENTION_MS + MARGIN_MS) }, // just outside
    ]);
    const [pending] = await withAttempts(owner, [{ status: 'pending', createdAt: slot()(5) }]);
    const [recent] = await withAttempts(owner, [
      { status: 'failed', createdAt: slot()(5), completedAt: ago(RETENTION_MS - MARGIN_MS) }, // ended late
    ]);
    const oldPartition = (await partitionOf(old[0]))!;
    const keptPartitions = [await partitionOf(pending), await partitionOf(recent)];
    expect(oldPartition).toMatch(/^deliveries_p\d{8}_\d{4}$/);
    expect(keptPartitions).not.toContain(oldPartition);
    expect(await attemptsOf(old)).toBe(old.length);
    await query(`UPDATE deliveries SET status = 'failed', completed_at = $2 WHERE id = $1`, [
      guard,
      ago(RETENTION_MS + MARGIN_MS),
    ]);

    await waitFor(async () => (await existing(old)).length === 0, 20_000, 'the old partition to go');
    await afterAPass(owner);
    expect(await tableExists(oldPartition)).toBe(false);
    expect(await tableExists(oldPartition.replace('deliveries_', 'delivery_attempts_'))).toBe(false);
    expect(await attemptsOf(old)).toBe(0);
    // Pending, or ended within the retention: their partitions stay, attempts too.
    expect((await existing([pending, recent])).sort()).toEqual([pending, recent].sort());
    expect([await partitionOf(pending), await partitionOf(recent)]).toEqual(keptPartitions);
    expect(await attemptsOf([pending, recent])).toBe(2);

    // Once the pending one ended longer ago than the retention, its partition goes too.
    await query(`UPDATE deliveries SET status = 'failed', completed_at = $2 WHERE id = $1`, [
      pending,
      ago(RETENTION_MS + MARGIN_MS),
    ]);
    await waitFor(async () => (await existing([pending])).length === 0, 20_000, 'the partition of the ended one');
    expect(await attemptsOf([pending])).toBe(0);
    expect(await existing([recent])).toEqual([recent]);
    // Submissions are the product's data: they stay.
    const [{ n }] = await query<{ n: number }>(`SELECT count(*)::int AS n FROM submissions WHERE workspace_id = $1`, [
      workspace.id,
    ]);
    expect(n).toBe(1);
    expect(await query(`SELECT id FROM submissions WHERE id = $1`, [submission.id])).toHaveLength(1);
  }, 60_000);

  it('keeps the partition of a delivery retried near the edge: it is pending again, then ended within the retention', async () => {
    const { owner, api, webhook } = await delivered();
    const at = slot();
    // `guard` (pending) keeps the partition until the retry is in; then it ends long ago.
    const [retried, guard] = await insertDeliveries(t, owner, [
      { status: 'failed', createdAt: at(0) },
      { status: 'pending', createdAt: at(1) },
    ]);
    expectJson(await api.post(`/webhooks/${webhook.id}/deliveries/${retried}/retry`), 202);
    await query(`UPDATE deliveries SET status = 'failed', completed_at = $2 WHERE id = $1`, [
      guard,
      ago(RETENTION_MS + MARGIN_MS),
    ]);
    await waitFor(async () => {
      const [row] = await query<{ status: string }>(`SELECT status FROM deliveries WHERE id = $1`, [retried]);
      return row.status === 'succeeded';
    }, 10_000);
    await afterAPass(owner);
    expect((await existing([retried, guard])).sort()).toEqual([retried, guard].sort());
    expect(await attemptsOf([retried])).toBe(1);
  });

  it('gives up while another transaction holds the table, without holding up deliveries, and drops it later', async () => {
    const { owner, api, calculator } = await delivered();
    const [held] = await insertDeliveries(t, owner, [{ status: 'failed', createdAt: slot()(0) }]);
    const holder = t.dataSource.createQueryRunner();
    await holder.connect();
    try {
      await holder.startTransaction();
      await holder.query(`SELECT id FROM deliveries WHERE id = $1 FOR UPDATE`, [held]);
      // Passes meanwhile wait at most their lock timeout each: a submission is still delivered.
      const before = receiver.requests.length;
      await submit(api, calculator.id);
      await waitFor(() => receiver.requests.length > before, 10_000, 'a delivery while retention waits');
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(await existing([held])).toEqual([held]);
      await holder.commitTransaction();
    } finally {
      await holder.release();
    }
    await waitFor(async () => (await existing([held])).length === 0, 20_000, 'the released partition to go');
  });

  it('deletes ended recoveries, never a running one', async () => {
    const { owner } = await delivered();
    // Disabled: the worker leaves its running recovery as it is.
    await query(`UPDATE webhooks SET disabled_at = now(), disabled_reason = 'manual' WHERE id = $1`, [owner.webhookId]);
    const ids = { completed: createId(), cancelled: createId(), running: createId() };
    const insertRecovery = (id: string, status: string, endedAgoMs: number) =>
      query(
        `INSERT INTO recoveries (id, workspace_id, webhook_id, since, until, status, created_at, updated_at, completed_at)
         VALUES ($1, $2, $3, $5::timestamptz - interval '1 hour', $5, $4::varchar, $5, $5, CASE WHEN $4::varchar <> 'running' THEN $5 END)`,
        [id, owner.workspaceId, owner.webhookId, status, ago(endedAgoMs)],
      );
    for (const [status, id] of Object.entries(ids)) await insertRecovery(id, status, LONG_AGO_MS);
    const recent = createId(); // ended within the retention
    await insertRecovery(recent, 'completed', RETENTION_MS - MARGIN_MS);
    const left = () =>
      query<{ id: string; status: string }>(`SELECT id, status FROM recoveries WHERE webhook_id = $1`, [
        owner.webhookId,
      ]);
    await waitFor(async () => (await left()).length === 2, 20_000, 'the old ended recoveries to go');
    // A later pass, seen by a sentinel recovery of its own going, keeps them too.
    const sentinel = createId();
    await insertRecovery(sentinel, 'completed', LONG_AGO_MS);
    await waitFor(async () => !(await left()).some((r) => r.id === sentinel), 20_000, 'a pass to take the sentinel');
    expect((await left()).sort((a, b) => a.id.localeCompare(b.id))).toEqual(
      [
        { id: ids.running, status: 'running' },
        { id: recent, status: 'completed' },
      ].sort((a, b) => a.id.localeCompare(b.id)),
    );
  });

  it('refuses a recovery whose since is older than the retention', async () => {
    const { api, webhook } = await delivered();
    const since = (ago: number) => new Date(Date.now() - ago).toISOString();
    expectBadRequest(
      await api.post(`/webhooks/${webhook.id}/recover`, { since: since(RETENTION_MS + MARGIN_MS) }),
      'since',
    );
    const res = await api.post(`/webhooks/${webhook.id}/recover`, {
      since: since(RETENTION_MS - MARGIN_MS),
      dryRun: true,
    });
    expectJson(res, 200);
  });
});
