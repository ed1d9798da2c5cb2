// Measures retention of one partition (DESIGN 7.7): ROWS deliveries (default 1,000,000), each with one
// attempt, in a partition created past DELIVERY_RETENTION, all ended; then one retention run drops it.
// Prints how long the run took and the dead tuples left in the delivery tables (none: nothing is deleted).
//   node scripts/ensure-build.mjs && ROWS=1000000 node scripts/partition-retention.mjs
// Uses its own database (DATABASE_URL's server, database calc_webhooks_partition_retention), dropped at the end.
import 'reflect-metadata';
import pg from 'pg';
import { URL } from 'node:url';
import { DataSource } from 'typeorm';
import { loadConfig } from '../dist/core/config/config.js';
import { dataSourceOptions } from '../dist/core/database/data-source.js';
import { runMigrations } from '../dist/core/database/migrate.js';
import { createDeliveryPartitions, DeliveryPartitions } from '../dist/delivery/store/delivery-partitions.js';

const ROWS = Number(process.env.ROWS ?? 1_000_000);
const DAY_MS = 86_400_000;
const url = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/calc_webhooks');
url.pathname = '/calc_webhooks_partition_retention';
const config = loadConfig({ ...process.env, DATABASE_URL: url.toString(), DELIVERY_RETENTION: '30d' });

const admin = new pg.Client({ connectionString: new URL('/postgres', url).toString() });
await admin.connect();
await admin.query(`DROP DATABASE IF EXISTS calc_webhooks_partition_retention`);
await runMigrations(config);
const dataSource = new DataSource(dataSourceOptions(config, 2));
await dataSource.initialize();
try {
  // One partition of a day, 60 days back: wholly past the 30 days of retention.
  const from = new Date(Math.floor((Date.now() - 60 * DAY_MS) / DAY_MS) * DAY_MS);
  const [name] = await createDeliveryPartitions(dataSource, {
    from,
    to: new Date(from.getTime() + 1),
    intervalMs: DAY_MS,
  });
  await dataSource.query(`
    WITH ws AS (INSERT INTO workspaces (id, name) VALUES ('w', 'bench') RETURNING id),
    calc AS (INSERT INTO calculators (id, workspace_id, folder_id, name) SELECT 'c', id, 'f', 'bench' FROM ws RETURNING id),
    hook AS (INSERT INTO webhooks (id, workspace_id, url, secret) SELECT 'h', id, 'https://example.com', 's' FROM ws)
    INSERT INTO submissions (id, workspace_id, calculator_id, data) SELECT 's', 'w', id, '{}' FROM calc`);
  const started = Date.now();
  await dataSource.query(
    `INSERT INTO deliveries (id, workspace_id, webhook_id, submission_id, calculator_id, status, attempt_count,
                             max_attempts, created_at, updated_at, completed_at, last_attempt_at, last_status_code)
     SELECT 'd' || g, 'w', 'h', 's', 'c', 'succeeded', 1, 8, t, t, t + interval '1 second', t, 200
     FROM generate_series(1, $1::int) g, LATERAL (SELECT $2::timestamptz + (g % 86000) * interval '1 second' AS t) x`,
    [ROWS, from],
  );
  await dataSource.query(
    `INSERT INTO delivery_attempts (delivery_id, delivery_created_at, attempt_number, started_at, duration_ms,
                                    status_code, response_body, succeeded)
     SELECT id, created_at, 1, created_at, 120, 200, 'ok', true FROM ${name}`,
  );
  await dataSource.query(`VACUUM ANALYZE deliveries, delivery_attempts`);
  console.log(`${ROWS} deliveries and their attempts in ${name}, written in ${Date.now() - started} ms`);

  const retention = new DeliveryPartitions(dataSource, config);
  const t0 = process.hrtime.bigint();
  const dropped = await retention.dropExpired(config.deliveryRetentionMs);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const [{ dead, rows }] = await dataSource.query(
    `SELECT coalesce(sum(n_dead_tup), 0)::bigint AS dead, (SELECT count(*) FROM deliveries)::bigint AS rows
     FROM pg_stat_user_tables WHERE relname ~ '^(deliveries|delivery_attempts)'`,
  );
  console.log(`retention: dropped ${dropped.join(', ')} in ${ms.toFixed(0)} ms`);
  console.log(`left: ${rows} deliveries, ${dead} dead tuples in the delivery tables`);
} finally {
  await dataSource.destroy();
  await admin.query(`DROP DATABASE IF EXISTS calc_webhooks_partition_retention`);
  await admin.end();
}
