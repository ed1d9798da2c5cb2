import { createId } from '@paralleldrive/cuid2';
import { insertDeliveries, ownerOf } from '../support/delivery-rows.js';
import { FAST_DELIVERY, setupWebhook, submit } from '../support/delivery.js';
import { expectBadRequest, expectJson } from '../support/management-api.js';
import { Receiver, waitFor } from '../support/receiver.js';
import { createTestApp, type TestApp } from '../support/test-app.js';

const RETENTION_MS = 3_000;

describe('retention (DELIVERY_RETENTION=3s)', () => {
  let t: TestApp;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await createTestApp({ ...FAST_DELIVERY, DELIVERY_RETENTION: '3s' });
    receiver = await Receiver.start(() => ({ status: 200 }));
  });
  afterAll(async () => {
    await receiver.close();
    await t.close();
  });

  const count = async (sql: string, params: unknown[]) => ((await t.dataSource.query(sql, params))[0].n as number) ?? 0;
  const deliveriesOf = (webhookId: string) =>
    count(`SELECT count(*)::int AS n FROM deliveries WHERE webhook_id = $1`, [webhookId]);
  const attemptsOf = (ids: string[]) =>
    count(`SELECT count(*)::int AS n FROM delivery_attempts WHERE delivery_id = ANY($1)`, [ids]);
  const existing = async (ids: string[]) =>
    ((await t.dataSource.query(`SELECT id FROM deliveries WHERE id = ANY($1)`, [ids])) as { id: string }[]).map(
      (r) => r.id,
    );

  /** A webhook with one delivered submission, and the owner for rows inserted beside it. */
  async function delivered() {
    const setup = await setupWebhook(t, receiver.url);
    const submission = await submit(setup.api, setup.calculator.id);
    const [real] = await waitFor(async () => {
      const rows = await t.dataSource.query(
        `SELECT id, completed_at AS "completedAt" FROM deliveries WHERE submission_id = $1 AND status = 'succeeded'`,
        [submission.id],
      );
      return rows.length === 1 ? (rows as { id: string; completedAt: Date }[]) : null;
    });
    const owner = ownerOf(setup, submission);
    return { ...setup, submission, real, owner };
  }

  it('deletes deliveries that ended more than the retention ago, with their attempts, never a pending one', async () => {
    const { owner, real, submission, workspace } = await delivered();
    const hourAgo = new Date(Date.now() - 3_600_000);
    const old = await insertDeliveries(t, owner, [
      ...Array.from({ length: 2_500 }, () => ({ status: 'succeeded' as const, createdAt: hourAgo })), // several batches
      { status: 'failed', createdAt: hourAgo },
      { status: 'cancelled', createdAt: hourAgo },
      { status: 'skipped', createdAt: hourAgo },
    ]);
    const [pending] = await insertDeliveries(t, owner, [{ status: 'pending', createdAt: hourAgo }]);
    await t.dataSource.query(
      `INSERT INTO delivery_attempts (delivery_id, attempt_number, trigger, started_at, duration_ms, succeeded)
       SELECT d, 1, 'scheduled', now() - interval '1 hour', 5, true FROM unnest($1::varchar[]) AS x(d)`,
      [old.slice(0, 3)],
    );
    expect(await attemptsOf(old.slice(0, 3))).toBe(3);

    await waitFor(async () => (await existing(old)).length === 0, 20_000, 'the old ended deliveries to go');
    expect(await attemptsOf(old.slice(0, 3))).toBe(0);
    expect(await existing([pending])).toEqual([pending]);
    // Ended within the retention: still there (it ended moments ago).
    const lateEnough = real.completedAt.getTime() + RETENTION_MS;
    if (Date.now() < lateEnough - 500) expect(await existing([real.id])).toEqual([real.id]);

    await waitFor(async () => (await existing([real.id])).length === 0, 20_000, 'the real delivery to go');
    expect(Date.now()).toBeGreaterThanOrEqual(lateEnough);
    expect(await attemptsOf([real.id])).toBe(0);
    expect(await deliveriesOf(owner.webhookId)).toBe(1); // the pending one
    // Submissions are the product's data: they stay.
    expect(await count(`SELECT count(*)::int AS n FROM submissions WHERE workspace_id = $1`, [workspace.id])).toBe(1);
    expect(await count(`SELECT count(*)::int AS n FROM submissions WHERE id = $1`, [submission.id])).toBe(1);
  }, 60_000);

  it('skips rows another transaction holds instead of waiting for them, and takes them on a later pass', async () => {
    const { owner } = await delivered();
    const hourAgo = new Date(Date.now() - 3_600_000);
    const [held, ...free] = await insertDeliveries(
      t,
      owner,
      Array.from({ length: 5 }, () => ({ status: 'failed' as const, createdAt: hourAgo })),
    );
    const holder = t.dataSource.createQueryRunner();
    await holder.connect();
    try {
      await holder.startTransaction();
      await holder.query(`SELECT id FROM deliveries WHERE id = $1 FOR UPDATE`, [held]);
      await waitFor(async () => (await existing(free)).length === 0, 20_000, 'the free rows to go');
      expect(await existing([held])).toEqual([held]);
      await holder.commitTransaction();
    } finally {
      await holder.release();
    }
    await waitFor(async () => (await existing([held])).length === 0, 20_000, 'the released row to go');
  });

  it('deletes ended recoveries, never a running one', async () => {
    const { owner } = await delivered();
    // Disabled: the worker leaves its running recovery as it is.
    await t.dataSource.query(`UPDATE webhooks SET disabled_at = now(), disabled_reason = 'manual' WHERE id = $1`, [
      owner.webhookId,
    ]);
    const ids = { completed: createId(), cancelled: createId(), running: createId() };
    for (const [status, id] of Object.entries(ids)) {
      await t.dataSource.query(
        `INSERT INTO recoveries (id, workspace_id, webhook_id, since, until, status, created_at, updated_at, completed_at)
         VALUES ($1, $2, $3, now() - interval '2 hours', now() - interval '1 hour', $4::varchar,
           now() - interval '1 hour', now() - interval '1 hour', CASE WHEN $4::varchar <> 'running' THEN now() - interval '1 hour' END)`,
        [id, owner.workspaceId, owner.webhookId, status],
      );
    }
    const left = async () =>
      (await t.dataSource.query(`SELECT id, status FROM recoveries WHERE webhook_id = $1`, [owner.webhookId])) as {
        id: string;
        status: string;
      }[];
    await waitFor(async () => (await left()).length === 1, 20_000, 'the ended recoveries to go');
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await left()).toEqual([{ id: ids.running, status: 'running' }]);
  });

  it('refuses a recovery whose since is older than the retention', async () => {
    const { api, webhook } = await delivered();
    const since = (ago: number) => new Date(Date.now() - ago).toISOString();
    expectBadRequest(await api.post(`/webhooks/${webhook.id}/recover`, { since: since(10_000) }), 'since');
    const res = await api.post(`/webhooks/${webhook.id}/recover`, { since: since(1_000), dryRun: true });
    expectJson(res, 200);
  });
});
