import type { PoolClient } from 'pg';
import { destinationOf, HostWakes } from '../../src/delivery/host-wakes.js';
import { DeliveryPartitionUpkeep } from '../../src/delivery/scheduled/delivery-partition-upkeep.js';
import { deliveryPartitions, DeliveryPartitions } from '../../src/delivery/store/delivery-partitions.js';
import { insertDeliveries, ownerOf } from '../support/delivery-rows.js';
import { FAST_DELIVERY, setupWebhook, submit } from '../support/delivery.js';
import { expectJson } from '../support/management-api.js';
import { Receiver, waitFor } from '../support/receiver.js';
import { createTestApp, type TestApp } from '../support/test-app.js';

const DAY_MS = 86_400_000;
// A scan of a partition; an UPDATE's plan also lists every partition as a result relation, which it only
// opens once a row of it is to be changed.
const PARTITION_SCAN = /Scan [^\n]*? on ((deliveries|delivery_attempts)_p\d{8}_\d{4})\b/g;

// A read of webhooks (by any index) and the rows it returned.
const WEBHOOKS_SCAN = /Scan [^\n]*? on webhooks \w+ [^\n]*?actual rows=(\d+)/g;

/** The partitions a plan scans, without repeats. */
const partitionsIn = (plan: string) => [...new Set([...plan.matchAll(PARTITION_SCAN)].map((m) => m[1]))].sort();

describe('partitioned delivery tables (DESIGN 9): every hot statement touches only its partitions', () => {
  let t: TestApp;
  let receiver: Receiver;
  let partitions: number;

  beforeAll(async () => {
    t = await createTestApp({ ...FAST_DELIVERY });
    receiver = await Receiver.start(() => ({ status: 200 }));
    // Three weeks back as well, so pruning has partitions to leave out.
    await t.app.get(DeliveryPartitions).ensure(new Date(Date.now() - 21 * DAY_MS), new Date());
    partitions = (await deliveryPartitions(t.dataSource)).length;
    expect(partitions).toBeGreaterThanOrEqual(5);
  });
  afterAll(async () => {
    await receiver.close();
    await t.close();
  });

  /** A pending delivery due tomorrow (no wake for its host), `ageMs` old, and its partitions' names. */
  async function pendingDelivery(ageMs = 0) {
    const setup = await setupWebhook(t, receiver.url);
    const submission = await submit(setup.api, setup.calculator.id);
    const createdAt = new Date(Date.now() - ageMs);
    const [id] = await insertDeliveries(t, ownerOf(setup, submission), [{ status: 'pending', createdAt }]);
    const [{ name }] = (await t.dataSource.query(
      `SELECT tableoid::regclass::text AS name FROM deliveries WHERE id = $1`,
      [id],
    )) as { name: string }[];
    return { ...setup, id, createdAt, partition: name, attempts: name.replace('deliveries_', 'delivery_attempts_') };
  }

  /**
   * Runs `work` on a connection that sends the plan of every statement, the function's own ones
   * included, back as a notice (auto_explain), as each ran (ANALYZE): what plpgsql really executed.
   */
  async function plansOf(work: (client: PoolClient) => Promise<unknown>): Promise<string[]> {
    const runner = t.dataSource.createQueryRunner();
    const client = (await runner.connect()) as PoolClient;
    const plans: string[] = [];
    const onNotice = (notice: { message?: string }) => plans.push(notice.message ?? '');
    client.on('notice', onNotice);
    try {
      await client.query(`LOAD 'auto_explain'`);
      for (const setting of [
        'log_min_duration = 0',
        'log_nested_statements = on',
        'log_analyze = on',
        'log_timing = off',
        `log_level = 'notice'`,
      ]) {
        await client.query(`SET auto_explain.${setting}`);
      }
      await work(client);
      return plans.filter((plan) => /Query Text/.test(plan) && partitionsIn(plan).length > 0);
    } finally {
      client.off('notice', onNotice);
      await client.query(`RESET ALL`).catch(() => undefined);
      await runner.release();
    }
  }

  it('the claim keeps only the batch’s partition when each statement starts (generic plan, Subplans Removed)', async () => {
    for (let i = 0; i < 4; i++) await setupWebhook(t, receiver.url); // webhooks the claim must not read
    const d = await pendingDelivery();
    // Due, as the claim leases only a due delivery, and at no host, so no drain takes it from this test.
    await t.dataSource.query(`UPDATE deliveries SET next_attempt_at = now(), host = NULL WHERE id = $1`, [d.id]);
    const plans = await plansOf(async (client) => {
      // Several calls: a function's statements keep their generic plan from the first (force_generic_plan).
      for (let i = 0; i < 3; i++) {
        await client.query(`SELECT * FROM claim_delivery_attempts($1, $2, $3)`, [[d.id], [d.createdAt], 60_000]);
        await client.query(`UPDATE deliveries SET lease_until = NULL WHERE id = $1 AND created_at = $2`, [
          d.id,
          d.createdAt,
        ]);
        await client.query(`SELECT pg_advisory_unlock_all()`);
      }
    });
    const inFunction = plans.filter(
      (plan) => !/Query Text: (SELECT \* FROM claim|UPDATE deliveries SET lease_until)/.test(plan),
    );
    expect(inFunction.length).toBeGreaterThanOrEqual(9); // the webhooks' lookup, the lease and the context, 3 times
    for (const plan of inFunction) {
      expect(plan).toContain(`Subplans Removed: ${partitions - 1}`);
      expect(partitionsIn(plan)).toEqual([d.partition]);
      // Its webhook is read by key: one row, never a scan of every webhook joined by a filter.
      for (const [, rows] of plan.matchAll(WEBHOOKS_SCAN)) expect(Number(rows)).toBeLessThanOrEqual(1);
      expect(plan).not.toMatch(/Join Filter: [^\n]*webhook_id/);
    }
    expect(inFunction.filter((plan) => plan.match(WEBHOOKS_SCAN)).length).toBeGreaterThanOrEqual(6); // lease, context
  });

  it('the record keeps only the batch’s partitions when it starts (generic plan, Subplans Removed)', async () => {
    const d = await pendingDelivery();
    const now = new Date();
    const plans = await plansOf((client) =>
      client.query(
        `SELECT * FROM record_delivery_attempts($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
        [
          [d.id],
          [1],
          ['scheduled'],
          [now],
          [5],
          [200],
          [null],
          [null],
          [true],
          ['succeeded'],
          [null],
          [now],
          10,
          0,
          [d.createdAt],
        ],
      ),
    );
    const [record] = plans.filter((plan) => /INSERT INTO delivery_attempts/.test(plan));
    expect(record).toBeDefined();
    expect(record).toContain(`Subplans Removed: ${partitions - 1}`);
    expect(partitionsIn(record)).toEqual([d.partition]);
    // Two reads of `deliveries`, each paying the pruning set-up: each attempt's delivery, then its update.
    expect(record.match(/Subplans Removed/g)).toHaveLength(2);
    // The attempt is routed to its delivery's twin partition.
    const [row] = (await t.dataSource.query(
      `SELECT d.status, a.delivery_created_at, a.tableoid::regclass::text AS partition FROM deliveries d
       JOIN delivery_attempts a ON a.delivery_id = d.id AND a.delivery_created_at = d.created_at WHERE d.id = $1`,
      [d.id],
    )) as { status: string; delivery_created_at: Date; partition: string }[];
    expect(row).toEqual({ status: 'succeeded', delivery_created_at: d.createdAt, partition: d.attempts });
  });

  it('the log’s cursor page and a delivery’s attempts are pruned by the planner (their created_at bounds)', async () => {
    const setup = await setupWebhook(t, receiver.url);
    for (let i = 0; i < 3; i++) await submit(setup.api, setup.calculator.id);
    await waitFor(async () => {
      const rows = (await t.dataSource.query(
        `SELECT 1 FROM deliveries WHERE webhook_id = $1 AND status = 'succeeded'`,
        [setup.webhook.id],
      )) as unknown[];
      return rows.length === 3;
    });
    const first = await setup.api.get('/deliveries?limit=1');
    expectJson(first, 200);
    const [delivery] = first.body.data as { id: string; createdAt: string }[];

    // The statements TypeORM sends for the next page and for the delivery's attempts, explained as sent.
    const sent: { sql: string; parameters: unknown[] }[] = [];
    const logger = t.dataSource.logger;
    Object.assign(t.dataSource, {
      logger: { ...logger, logQuery: (sql: string, parameters: unknown[] = []) => sent.push({ sql, parameters }) },
    });
    try {
      expectJson(await setup.api.get(`/deliveries?limit=1&cursor=${first.body.nextCursor as string}`), 200);
      expectJson(await setup.api.get(`/deliveries/${delivery.id}`), 200);
    } finally {
      Object.assign(t.dataSource, { logger });
    }
    const explain = async (pattern: RegExp) => {
      const statement = sent.find((s) => pattern.test(s.sql))!;
      const rows = (await t.dataSource.query(
        `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ${statement.sql}`,
        statement.parameters,
      )) as { 'QUERY PLAN': string }[];
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    };
    // Newer partitions than the cursor are left out by the planner; older ones are never reached (LIMIT).
    const page = await explain(/FROM "deliveries".*"d"\."created_at" <=/s);
    const pageScans = partitionsIn(page);
    const [{ name: now }] = (await t.dataSource.query(
      `SELECT tableoid::regclass::text AS name FROM deliveries WHERE id = $1`,
      [delivery.id],
    )) as { name: string }[];
    expect(page).not.toContain('Subplans Removed');
    expect(pageScans).toContain(now);
    expect(pageScans.length).toBeLessThan(partitions);
    for (const old of pageScans.filter((name) => name < now)) {
      expect(page).toMatch(new RegExp(`on ${old} [^\\n]*\\(never executed\\)`));
    }

    const attempts = await explain(/FROM "delivery_attempts"/);
    expect(partitionsIn(attempts)).toEqual([now.replace('deliveries_', 'delivery_attempts_')]);
  });

  it('delivers a pending delivery of two weeks ago once due and its host woken; its attempt goes to its partition', async () => {
    const d = await pendingDelivery(14 * DAY_MS);
    const [{ host }] = (await t.dataSource.query(
      `WITH due AS (UPDATE deliveries SET next_attempt_at = now() WHERE id = $1 AND created_at = $2 RETURNING host)
       SELECT host FROM due`,
      [d.id, d.createdAt],
    )) as { host: string }[];
    expect(host).toBe(destinationOf(receiver.url));
    await t.app.get(HostWakes).wake([{ host }]);
    await waitFor(async () => {
      const [row] = (await t.dataSource.query(`SELECT status FROM deliveries WHERE id = $1`, [d.id])) as {
        status: string;
      }[];
      return row.status === 'succeeded';
    }, 10_000);
    expect(receiver.requests.filter((r) => r.headers['webhook-id'] === d.id)).toHaveLength(1);
    const attempts = (await t.dataSource.query(
      `SELECT tableoid::regclass::text AS partition FROM delivery_attempts WHERE delivery_id = $1`,
      [d.id],
    )) as { partition: string }[];
    expect(attempts).toEqual([{ partition: d.attempts }]);
  });

  it('keeps partitions DELIVERY_PARTITIONS_AHEAD ahead (create-delivery-partitions)', async () => {
    await t.app.get(DeliveryPartitionUpkeep).createAhead();
    const ahead = Date.now() + t.config.deliveryPartitions.aheadMs;
    const covering = (await deliveryPartitions(t.dataSource)).filter(
      (p) => p.from.getTime() <= ahead && ahead < p.to.getTime(),
    );
    expect(covering).toHaveLength(1);
    const [{ found }] = (await t.dataSource.query(`SELECT to_regclass($1) IS NOT NULL AS found`, [
      covering[0].name.replace('deliveries_', 'delivery_attempts_'),
    ])) as { found: boolean }[];
    expect(found).toBe(true);
  });
});
