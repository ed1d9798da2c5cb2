import type { PoolClient } from 'pg';
import { DatabaseLock } from '../../src/core/database/database-lock.js';
import { AttemptClaims, type Claim } from '../../src/delivery/store/attempt-claims.js';
import { RELEASE_LEASE } from '../../src/delivery/store/delivery-statements.js';
import { STORE_FUNCTIONS } from '../../src/delivery/store/store-functions.js';
import { deliveryReads, insertDeliveries, ownerOf } from '../support/delivery-rows.js';
import { setupWebhook, submit } from '../support/delivery.js';
import { waitFor } from '../support/receiver.js';
import { createTestApp, type TestApp } from '../support/test-app.js';

const URL = 'https://receiver.example.com/hook';

describe('attempt claims (real Postgres, no worker)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  /** Pending deliveries due now, of a webhook of a new workspace. */
  async function pendingDeliveries(count: number): Promise<string[]> {
    return (await webhookWithPending(count)).ids;
  }

  async function webhookWithPending(count: number): Promise<{ webhookId: string; ids: string[] }> {
    const setup = await setupWebhook(t, URL);
    const submission = await submit(setup.api, setup.calculator.id);
    const owner = ownerOf(setup, submission);
    const ids = await insertDeliveries(
      t,
      owner,
      Array.from({ length: count }, () => ({ status: 'pending' as const, createdAt: new Date() })),
    );
    await t.dataSource.query(`UPDATE deliveries SET next_attempt_at = now() WHERE id = ANY($1)`, [ids]);
    return { webhookId: setup.webhook.id, ids };
  }

  /**
   * Pending deliveries of a new webhook, due as written (the claim leases only due ones): an update to make
   * them due would move them off their pages.
   */
  async function dueAsWritten(count: number): Promise<string[]> {
    const setup = await setupWebhook(t, URL);
    const owner = ownerOf(setup, await submit(setup.api, setup.calculator.id));
    const dueAt = new Date();
    return insertDeliveries(
      t,
      owner,
      Array.from({ length: count }, () => ({ status: 'pending' as const, createdAt: new Date(), dueAt })),
    );
  }

  /** Each id's created_at, as a job carries it (now for an id that is no delivery). */
  async function createdAtOf(ids: string[]): Promise<Date[]> {
    const rows = (await t.dataSource.query(`SELECT id, created_at FROM deliveries WHERE id = ANY($1)`, [ids])) as {
      id: string;
      created_at: Date;
    }[];
    const found = new Map(rows.map((r) => [r.id, r.created_at]));
    return ids.map((id) => found.get(id) ?? new Date());
  }

  const releaseAll = (claims: Claim[]) => {
    for (const claim of claims) if (claim.outcome === 'claimed') claim.written();
  };

  it('two jobs of one delivery claiming in one batch: only one gets it, the other is busy', async () => {
    const [first, duplicated] = await pendingDeliveries(2);
    // A pool of 2 lets one claim batch run at a time: the duplicated claims wait together behind the first.
    const claims = new AttemptClaims(t.dataSource, { ...t.config, databasePoolSize: 2 });
    const results = await Promise.all([claims.claim(first), claims.claim(duplicated), claims.claim(duplicated)]);
    releaseAll(results);

    expect(results[0].outcome).toBe('claimed');
    expect(results.slice(1).map((c) => c.outcome)).toEqual(['claimed', 'busy']);
    // The lease is held: a later claim of either job is busy too.
    const later = await claims.claim(duplicated);
    releaseAll([later]);
    expect(later.outcome).toBe('busy');
  });

  it('one batch of every kind: each delivery gets its outcome, and only webhooks with a leased one stay locked', async () => {
    const open = await webhookWithPending(2);
    const removed = await webhookWithPending(1);
    const disabled = await webhookWithPending(1);
    const other = await webhookWithPending(2); // one leased by another worker, one already delivered
    await t.dataSource.query(`UPDATE webhooks SET removed_at = now() WHERE id = $1`, [removed.webhookId]);
    await t.dataSource.query(`UPDATE webhooks SET disabled_at = now(), disabled_reason = 'manual' WHERE id = $1`, [
      disabled.webhookId,
    ]);
    const [leasedElsewhere, delivered] = other.ids;
    await t.dataSource.query(`UPDATE deliveries SET lease_until = now() + interval '1 minute' WHERE id = $1`, [
      leasedElsewhere,
    ]);
    await t.dataSource.query(
      `UPDATE deliveries SET status = 'succeeded', next_attempt_at = NULL, completed_at = now() WHERE id = $1`,
      [delivered],
    );
    const batch = [
      open.ids[0],
      removed.ids[0],
      disabled.ids[0],
      leasedElsewhere,
      delivered,
      'nosuchdelivery',
      open.ids[1],
    ];

    // The function itself, on a connection of its own, so the locks it leaves can be read from another.
    const runner = t.dataSource.createQueryRunner();
    try {
      const [{ pid }] = (await runner.query('SELECT pg_backend_pid() AS pid')) as { pid: number }[];
      const rows = (await runner.query('SELECT delivery_id, outcome, url FROM claim_delivery_attempts($1, $2, 60000)', [
        batch,
        await createdAtOf(batch),
      ])) as { delivery_id: string; outcome: string; url: string | null }[];
      const outcomes = Object.fromEntries(rows.map((r) => [r.delivery_id, r.outcome]));
      expect(outcomes).toEqual({
        [open.ids[0]]: 'claimed',
        [open.ids[1]]: 'claimed',
        [removed.ids[0]]: 'cancelled',
        [disabled.ids[0]]: 'skipped',
        [leasedElsewhere]: 'busy',
        [delivered]: 'ended',
      });
      expect(rows.filter((r) => r.outcome === 'claimed').map((r) => r.url)).toEqual([URL, URL]);
      const locked = (await t.dataSource.query(
        `SELECT w.id FROM webhooks w JOIN pg_locks l ON l.locktype = 'advisory' AND l.classid = ${DatabaseLock.WebhookFence}
           AND l.objsubid = 2 AND l.objid = (hashtext(w.id)::bigint & 4294967295)::oid
         WHERE l.pid = $1 AND l.granted AND l.mode = 'ShareLock'`,
        [pid],
      )) as { id: string }[];
      expect(locked.map((r) => r.id)).toEqual([open.webhookId]);
      const statuses = (await t.dataSource.query(
        `SELECT id, status, lease_until IS NOT NULL AS leased FROM deliveries WHERE id = ANY($1) ORDER BY id`,
        [batch],
      )) as { id: string; status: string; leased: boolean }[];
      expect(Object.fromEntries(statuses.map((r) => [r.id, [r.status, r.leased]]))).toEqual({
        [open.ids[0]]: ['pending', true],
        [open.ids[1]]: ['pending', true],
        [removed.ids[0]]: ['cancelled', false],
        [disabled.ids[0]]: ['skipped', false],
        [leasedElsewhere]: ['pending', true],
        [delivered]: ['succeeded', false],
      });
    } finally {
      await runner.query('SELECT pg_advisory_unlock_all()');
      await runner.release();
    }
  });

  it('takes its webhooks’ locks one at a time in the global order (hashtext, then id): a held one stops the later ones', async () => {
    const hooks = await Promise.all([1, 2, 3].map(() => webhookWithPending(1)));
    const order = (
      (await t.dataSource.query(`SELECT id FROM unnest($1::varchar[]) id ORDER BY hashtext(id), id`, [
        hooks.map((h) => h.webhookId),
      ])) as { id: string }[]
    ).map((r) => r.id);
    const blocker = t.dataSource.createQueryRunner();
    const claimer = t.dataSource.createQueryRunner();
    try {
      // The middle one held exclusively, as a DELETE of that webhook holds it.
      await blocker.query(`SELECT pg_advisory_lock($1, hashtext($2))`, [DatabaseLock.WebhookFence, order[1]]);
      const [{ pid }] = (await claimer.query(`SELECT pg_backend_pid() AS pid`)) as { pid: number }[];
      const batch = hooks.map((h) => h.ids[0]);
      const claimed = claimer.query('SELECT delivery_id, outcome FROM claim_delivery_attempts($1, $2, 60000)', [
        batch,
        await createdAtOf(batch),
      ]) as Promise<{ delivery_id: string; outcome: string }[]>;
      const locksOfClaim = async () =>
        (await t.dataSource.query(
          `SELECT w.id, l.granted FROM pg_locks l
           JOIN unnest($1::varchar[]) w(id) ON l.objid = (hashtext(w.id)::bigint & 4294967295)::oid
           WHERE l.locktype = 'advisory' AND l.classid = $2 AND l.pid = $3 ORDER BY l.granted DESC, w.id`,
          [order, DatabaseLock.WebhookFence, pid],
        )) as { id: string; granted: boolean }[];
      const locks = await waitFor(
        async () => {
          const held = await locksOfClaim();
          return held.some((l) => !l.granted) ? held : null;
        },
        10_000,
        'the claim to wait for a lock',
      );
      // The first held, waiting for the second, the third not asked for yet.
      expect(locks).toEqual([
        { id: order[0], granted: true },
        { id: order[1], granted: false },
      ]);
      await blocker.query(`SELECT pg_advisory_unlock($1, hashtext($2))`, [DatabaseLock.WebhookFence, order[1]]);
      expect((await claimed).map((r) => r.outcome)).toEqual(['claimed', 'claimed', 'claimed']);
    } finally {
      await claimer.query(`SELECT pg_advisory_unlock_all()`).catch(() => undefined);
      await blocker.query(`SELECT pg_advisory_unlock_all()`).catch(() => undefined);
      await claimer.release();
      await blocker.release();
    }
  });

  it('a batch with nothing to lease leaves no lock behind', async () => {
    const removed = await webhookWithPending(1);
    const open = await webhookWithPending(1);
    await t.dataSource.query(`UPDATE webhooks SET removed_at = now() WHERE id = $1`, [removed.webhookId]);
    await t.dataSource.query(`UPDATE deliveries SET lease_until = now() + interval '1 minute' WHERE id = $1`, [
      open.ids[0],
    ]);
    const runner = t.dataSource.createQueryRunner();
    try {
      const batch = [removed.ids[0], open.ids[0]];
      const rows = (await runner.query('SELECT delivery_id, outcome FROM claim_delivery_attempts($1, $2, 60000)', [
        batch,
        await createdAtOf(batch),
      ])) as { delivery_id: string; outcome: string }[];
      expect(rows.map((r) => r.outcome).sort()).toEqual(['busy', 'cancelled']);
      const [{ n }] = (await runner.query(
        `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()`,
      )) as { n: number }[];
      expect(n).toBe(0);
    } finally {
      await runner.release();
    }
  });

  // A lease committed asynchronously is lost when Postgres crashes within its WAL writer's delay: the request
  // sent under it would then be sent again with no attempt logged (the soak with a Postgres crash saw it).
  it('commits its leases synchronously, even where the session commits asynchronously', async () => {
    const [id] = await pendingDeliveries(1);
    const runner = t.dataSource.createQueryRunner();
    try {
      await runner.query(`SET synchronous_commit = off`);
      await runner.startTransaction();
      const rows = (await runner.query('SELECT delivery_id, outcome FROM claim_delivery_attempts($1, $2, 60000)', [
        [id],
        await createdAtOf([id]),
      ])) as { delivery_id: string; outcome: string }[];
      expect(rows.map((r) => r.outcome)).toEqual(['claimed']);
      const [{ synchronous_commit }] = (await runner.query(`SHOW synchronous_commit`)) as {
        synchronous_commit: string;
      }[];
      expect(synchronous_commit).toBe('on');
      await runner.commitTransaction();
    } finally {
      await runner.query(`SELECT pg_advisory_unlock_all()`);
      await runner.query(`RESET synchronous_commit`);
      await runner.release();
    }
  });

  // Rows packed full would make almost every claim a non-HOT update: six new index entries for a lease.
  it('a claim of rows on a filled page is a HOT update (the page kept room for it)', async () => {
    // Enough rows for several pages: the first ones are on a page filled as far as Postgres fills one.
    const ids = await dueAsWritten(200);
    const first = ids.slice(0, 5);
    const runner = t.dataSource.createQueryRunner();
    try {
      // The count also holds this connection's earlier transactions until Postgres reports them (at idle,
      // at most once a second): what the claim added is the difference within one transaction.
      const hotUpdates = async () =>
        (
          (await runner.query(
            `SELECT sum(pg_stat_get_xact_tuples_hot_updated(inhrelid))::int AS n FROM pg_inherits
             WHERE inhparent = 'deliveries'::regclass`,
          )) as {
            n: number;
          }[]
        )[0].n;
      await runner.startTransaction();
      const before = await hotUpdates();
      const createdAt = await createdAtOf(first);
      const rows = (await runner.query('SELECT outcome FROM claim_delivery_attempts($1, $2, 60000)', [
        first,
        createdAt,
      ])) as {
        outcome: string;
      }[];
      const hot = (await hotUpdates()) - before;
      await runner.rollbackTransaction();
      expect(rows.map((r) => r.outcome)).toEqual(Array(5).fill('claimed'));
      expect(hot).toBe(5);
    } finally {
      await runner.query('SELECT pg_advisory_unlock_all()');
      await runner.release();
    }
  });

  // A partition without statistics (a new one, or autovacuum off) makes status = 'pending' look rare, and a
  // partial index on pending deliveries tiny: a claim once read that whole index, every pending delivery,
  // for each batch (a thousand hosts collapsed to 75/s). By key, a claim reads no such index at all.
  it('a claim and a lease given back read their deliveries by key, never a whole index of pending ones', async () => {
    const ids = await dueAsWritten(300);
    const batch = ids.slice(0, 5);
    const createdAt = await createdAtOf(batch);
    // A new connection plans the claim now, on the partition as it is.
    const runner = t.dataSource.createQueryRunner();
    try {
      const client = (await runner.connect()) as PoolClient;
      const pendingIndexReads = () => deliveryReads(client, 'partial indexes');
      await runner.startTransaction();
      const before = await pendingIndexReads();
      const rows = (await runner.query('SELECT outcome FROM claim_delivery_attempts($1, $2, 60000)', [
        batch,
        createdAt,
      ])) as { outcome: string }[];
      await runner.query(RELEASE_LEASE.text, [batch[0], createdAt[0]]);
      const read = (await pendingIndexReads()) - before;
      await runner.rollbackTransaction();
      expect(rows.map((r) => r.outcome)).toEqual(Array(5).fill('claimed'));
      expect(read).toBe(0);
    } finally {
      await runner.query('SELECT pg_advisory_unlock_all()');
      await runner.release();
    }
  });

  // Without this Postgres re-plans the claim and the record on every call for small batches (custom plans
  // win its cost comparison), and a plan made on a young database or an empty partition scans whole
  // indexes on every call (the sweeper's page of hosts sorted every pending delivery at each step).
  it('every store function is planned once per connection, to key and index lookups only', async () => {
    const rows = (await t.dataSource.query(
      `SELECT proname, proconfig FROM pg_proc WHERE proname = ANY($1) ORDER BY proname`,
      [[...STORE_FUNCTIONS]],
    )) as { proname: string; proconfig: string[] | null }[];
    const settings = [
      'plan_cache_mode=force_generic_plan',
      'enable_seqscan=off',
      'enable_hashjoin=off',
      'enable_mergejoin=off',
    ];
    expect(rows).toEqual([...STORE_FUNCTIONS].sort().map((proname) => ({ proname, proconfig: settings })));
  });
});
