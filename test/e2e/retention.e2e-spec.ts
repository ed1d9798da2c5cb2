import { createId } from '@paralleldrive/cuid2';
import { insertDeliveries, ownerOf, type DeliveryOwner } from '../support/delivery-rows.js';
import { FAST_DELIVERY, setupWebhook, submit } from '../support/delivery.js';
import { expectBadRequest, expectJson } from '../support/management-api.js';
import { Receiver, waitFor } from '../support/receiver.js';
import { createTestApp, type TestApp } from '../support/test-app.js';

// The rows' times are set relative to now, a MARGIN away from the retention's edge on either side:
// no test runs for 10 minutes, so no timing can move a row across it.
const RETENTION_MS = 3_600_000;
const MARGIN_MS = 600_000;
const ago = (ms: number) => new Date(Date.now() - ms);
const LONG_AGO_MS = RETENTION_MS + 3_600_000;

describe('retention (DELIVERY_RETENTION=1h)', () => {
  let t: TestApp;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await createTestApp({ ...FAST_DELIVERY, DELIVERY_RETENTION: '1h' });
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

  /**
   * Waits for a retention pass that began after this call: a sentinel row ended long ago is inserted and
   * must go. Every pass looks at all rows, so rows still there afterwards were kept by a pass, not missed.
   */
  async function afterAPass(owner: DeliveryOwner) {
    const [sentinel] = await insertDeliveries(t, owner, [{ status: 'succeeded', createdAt: ago(LONG_AGO_MS) }]);
    await waitFor(
      async () => (await existing([sentinel])).length === 0,
      20_000,
      'a retention pass to take the sentinel',
    );
  }

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
    const old = await insertDeliveries(t, owner, [
      ...Array.from({ length: 2_500 }, () => ({ status: 'succeeded' as const, createdAt: ago(LONG_AGO_MS) })), // several batches
      { status: 'failed', createdAt: ago(LONG_AGO_MS) },
      { status: 'cancelled', createdAt: ago(LONG_AGO_MS) },
      { status: 'skipped', createdAt: ago(LONG_AGO_MS) },
      { status: 'succeeded', createdAt: ago(RETENTION_MS + MARGIN_MS) }, // just outside the retention
    ]);
    const kept = await insertDeliveries(t, owner, [
      { status: 'succeeded', createdAt: ago(RETENTION_MS - MARGIN_MS) }, // just inside the retention
      { status: 'failed', createdAt: ago(LONG_AGO_MS), completedAt: ago(RETENTION_MS - MARGIN_MS) }, // ended late
      { status: 'pending', createdAt: ago(LONG_AGO_MS) },
    ]);
    await t.dataSource.query(
      `INSERT INTO delivery_attempts (delivery_id, attempt_number, trigger, started_at, duration_ms, succeeded)
       SELECT d, 1, 'scheduled', now() - interval '2 hours', 5, true FROM unnest($1::varchar[]) AS x(d)`,
      [[...old.slice(0, 3), kept[0]]],
    );
    expect(await attemptsOf(old.slice(0, 3))).toBe(3);
    expect(await attemptsOf([real.id])).toBe(1);

    await waitFor(async () => (await existing(old)).length === 0, 20_000, 'the old ended deliveries to go');
    await afterAPass(owner);
    expect(await attemptsOf(old.slice(0, 3))).toBe(0);
    // Ended within the retention (the real delivery moments ago), or pending: still there, attempts too.
    expect((await existing([real.id, ...kept])).sort()).toEqual([real.id, ...kept].sort());
    expect(await attemptsOf([real.id, kept[0]])).toBe(2);

    // Once it ended longer ago than the retention, the real delivery goes too, with its attempt.
    await t.dataSource.query(`UPDATE deliveries SET completed_at = $2 WHERE id = $1`, [real.id, ago(LONG_AGO_MS)]);
    await waitFor(async () => (await existing([real.id])).length === 0, 20_000, 'the real delivery to go');
    expect(await attemptsOf([real.id])).toBe(0);
    expect((await existing(kept)).sort()).toEqual([...kept].sort());
    expect(await deliveriesOf(owner.webhookId)).toBe(kept.length);
    // Submissions are the product's data: they stay.
    expect(await count(`SELECT count(*)::int AS n FROM submissions WHERE workspace_id = $1`, [workspace.id])).toBe(1);
    expect(await count(`SELECT count(*)::int AS n FROM submissions WHERE id = $1`, [submission.id])).toBe(1);
  }, 60_000);

  it('skips rows another transaction holds instead of waiting for them, and takes them on a later pass', async () => {
    const { owner } = await delivered();
    const [held, ...free] = await insertDeliveries(
      t,
      owner,
      Array.from({ length: 5 }, () => ({ status: 'failed' as const, createdAt: ago(LONG_AGO_MS) })),
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
    const insertRecovery = (id: string, status: string, endedAgoMs: number) =>
      t.dataSource.query(
        `INSERT INTO recoveries (id, workspace_id, webhook_id, since, until, status, created_at, updated_at, completed_at)
         VALUES ($1, $2, $3, $5::timestamptz - interval '1 hour', $5, $4::varchar, $5, $5, CASE WHEN $4::varchar <> 'running' THEN $5 END)`,
        [id, owner.workspaceId, owner.webhookId, status, ago(endedAgoMs)],
      );
    for (const [status, id] of Object.entries(ids)) await insertRecovery(id, status, LONG_AGO_MS);
    const recent = createId(); // ended within the retention
    await insertRecovery(recent, 'completed', RETENTION_MS - MARGIN_MS);
    const left = async () =>
      (await t.dataSource.query(`SELECT id, status FROM recoveries WHERE webhook_id = $1`, [owner.webhookId])) as {
        id: string;
        status: string;
      }[];
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
