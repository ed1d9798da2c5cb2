import { createId } from '@paralleldrive/cuid2';
import { DataSource } from 'typeorm';
import { loadConfig } from '../../src/core/config/config.js';
import { dataSourceOptions, MIGRATIONS } from '../../src/core/database/data-source.js';
import { ensureDatabase } from '../../src/core/database/migrate.js';
import { PartitionDeliveries1766000000000 } from '../../src/core/database/migrations/1766000000000-partition-deliveries.js';
import { deliveryPartitions } from '../../src/delivery/store/delivery-partitions.js';
import { dropTestDatabase, PG_BASE_URL } from '../support/test-app.js';

const DAY_MS = 86_400_000;

// An existing deployment's tables, rows and all, become partitioned ones (migration 1766000000000).
describe('the partitioning migration', () => {
  const config = loadConfig({ DATABASE_URL: `${PG_BASE_URL}/cw_test_${createId()}` });
  const migrate = async (migrations: typeof MIGRATIONS) => {
    const dataSource = new DataSource({ ...dataSourceOptions(config, 1), migrations });
    await dataSource.initialize();
    await dataSource.runMigrations({ transaction: 'each' });
    return dataSource;
  };
  let dataSource: DataSource | undefined;

  afterAll(async () => {
    await dataSource?.destroy();
    await dropTestDatabase(config.databaseUrl);
  });

  it('moves every delivery and attempt into partitions covering their times, attempts with their delivery’s created_at', async () => {
    await ensureDatabase(config.databaseUrl);
    // Every migration before it; it and those after it run below, on the rows.
    const before = await migrate(MIGRATIONS.slice(0, MIGRATIONS.indexOf(PartitionDeliveries1766000000000)));
    const times = [40 * DAY_MS, 9 * DAY_MS, 0].map((ago) => new Date(Date.now() - ago));
    const ids = times.map(() => createId());
    try {
      await before.query(`
        INSERT INTO workspaces (id, name) VALUES ('w', 'x');
        INSERT INTO calculators (id, workspace_id, folder_id, name) VALUES ('c', 'w', 'f', 'x');
        INSERT INTO webhooks (id, workspace_id, url, secret) VALUES ('h', 'w', 'https://example.com', 's');
        INSERT INTO submissions (id, workspace_id, calculator_id, data) VALUES ('s', 'w', 'c', '{}')`);
      await before.query(
        `INSERT INTO deliveries (id, workspace_id, webhook_id, submission_id, calculator_id, status, max_attempts,
                                 created_at, updated_at, completed_at)
         SELECT id, 'w', 'h', 's', 'c', 'succeeded', 8, t, t, t FROM unnest($1::varchar[], $2::timestamptz[]) AS x(id, t)`,
        [ids, times],
      );
      await before.query(
        `INSERT INTO delivery_attempts (delivery_id, attempt_number, started_at, duration_ms, status_code, succeeded)
         SELECT id, 1, created_at, 7, 200, true FROM deliveries`,
      );
    } finally {
      await before.destroy();
    }

    dataSource = await migrate(MIGRATIONS);
    const moved = (await dataSource.query(
      `SELECT d.id, d.created_at, d.tableoid::regclass::text AS partition, a.delivery_created_at,
              a.tableoid::regclass::text AS attempts_partition, a.status_code
       FROM deliveries d JOIN delivery_attempts a ON a.delivery_id = d.id ORDER BY d.created_at`,
    )) as {
      id: string;
      created_at: Date;
      partition: string;
      delivery_created_at: Date;
      attempts_partition: string;
      status_code: number;
    }[];
    expect(moved.map((r) => r.id)).toEqual(ids);
    for (const [i, row] of moved.entries()) {
      expect(row.created_at).toEqual(times[i]);
      expect(row.delivery_created_at).toEqual(times[i]);
      expect(row.status_code).toBe(200);
      expect(row.attempts_partition).toBe(row.partition.replace('deliveries_', 'delivery_attempts_'));
    }
    expect(new Set(moved.map((r) => r.partition)).size).toBe(3);
    // Partitions run without a gap from the oldest row's week to a week ahead.
    const partitions = await deliveryPartitions(dataSource);
    for (let i = 1; i < partitions.length; i++) expect(partitions[i].from).toEqual(partitions[i - 1].to);
    expect(partitions[0].from.getTime()).toBeLessThanOrEqual(times[0].getTime());
    expect(partitions[partitions.length - 1].to.getTime()).toBeGreaterThan(Date.now() + 7 * DAY_MS);
    const [{ tables }] = (await dataSource.query(
      `SELECT count(*)::int AS tables FROM pg_class WHERE relname LIKE '%unpartitioned%'`,
    )) as { tables: number }[];
    expect(tables).toBe(0);
  });
});
