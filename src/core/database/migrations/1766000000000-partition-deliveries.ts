import type { MigrationInterface, QueryRunner } from 'typeorm';
import { readSqlFile } from '../sql-file.js';

const storeFunction = (name: string) =>
  readSqlFile(new URL(`../../../delivery/store/sql/${name}.sql`, import.meta.url));

/**
 * `deliveries` and `delivery_attempts` partitioned by the delivery's created_at (DESIGN 9): the tables are
 * rebuilt as partitioned ones with their rows, an attempt carrying its delivery's created_at so both
 * tables' partitions have the same bounds and are dropped together (DESIGN 7.7). Partitions cover the rows
 * there are and the default interval ahead; the create-delivery-partitions job keeps them ahead after.
 */
export class PartitionDeliveries1766000000000 implements MigrationInterface {
  name = 'PartitionDeliveries1766000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE deliveries RENAME TO deliveries_unpartitioned`);
    await q.query(`ALTER TABLE delivery_attempts RENAME TO delivery_attempts_unpartitioned`);
    await q.query(`ALTER INDEX deliveries_pkey RENAME TO deliveries_unpartitioned_pkey`);
    await q.query(`ALTER INDEX delivery_attempts_pkey RENAME TO delivery_attempts_unpartitioned_pkey`);
    for (const index of ['webhook_log', 'workspace_log', 'submission', 'pending_due', 'ended']) {
      await q.query(`DROP INDEX deliveries_${index}_idx`);
    }

    // The key holds the partition key, as every unique index of a partitioned table must. Each partition
    // keeps 30% of its pages free (set per partition), so a claim's lease update stays HOT.
    await q.query(`
      CREATE TABLE deliveries (
        id varchar(32) NOT NULL,
        workspace_id varchar(32) NOT NULL,
        webhook_id varchar(32) NOT NULL CONSTRAINT deliveries_webhook_id_fkey REFERENCES webhooks(id) ON DELETE CASCADE,
        submission_id varchar(32)
          CONSTRAINT deliveries_submission_id_fkey REFERENCES submissions(id) ON DELETE CASCADE,
        test_submission jsonb,
        calculator_id varchar(32),
        status varchar(16) NOT NULL DEFAULT 'pending' CONSTRAINT deliveries_status_check
          CHECK (status IN ('pending', 'succeeded', 'failed', 'cancelled', 'skipped')),
        attempt_count integer NOT NULL DEFAULT 0,
        max_attempts integer NOT NULL,
        next_attempt_at timestamptz(3),
        last_attempt_at timestamptz(3),
        last_status_code integer,
        last_error text,
        lease_until timestamptz(3),
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        completed_at timestamptz(3),
        CONSTRAINT deliveries_pkey PRIMARY KEY (id, created_at),
        CONSTRAINT deliveries_submission_or_test_check CHECK (submission_id IS NOT NULL OR test_submission IS NOT NULL)
      ) PARTITION BY RANGE (created_at)`);
    await q.query(`CREATE INDEX deliveries_webhook_log_idx ON deliveries (webhook_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX deliveries_workspace_log_idx ON deliveries (workspace_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX deliveries_submission_idx ON deliveries (submission_id)`);
    await q.query(`CREATE INDEX deliveries_pending_due_idx ON deliveries (next_attempt_at) WHERE status = 'pending'`);
    await q.query(`CREATE INDEX deliveries_ended_idx ON deliveries (completed_at) WHERE completed_at IS NOT NULL`);
    // No foreign key to deliveries: one to a partitioned table is checked per attempt across every
    // partition's lock, and blocks dropping a partition. The record only logs attempts of deliveries there are.
    await q.query(`
      CREATE TABLE delivery_attempts (
        delivery_id varchar(32) NOT NULL,
        delivery_created_at timestamptz(3) NOT NULL,
        attempt_number integer NOT NULL,
        started_at timestamptz(3) NOT NULL,
        trigger varchar(16) NOT NULL DEFAULT 'scheduled',
        duration_ms integer NOT NULL,
        status_code integer,
        response_body text,
        error text,
        succeeded boolean NOT NULL,
        CONSTRAINT delivery_attempts_pkey PRIMARY KEY (delivery_id, attempt_number, started_at, delivery_created_at)
      ) PARTITION BY RANGE (delivery_created_at)`);

    // A week each (DELIVERY_PARTITION_INTERVAL's default), Monday to Monday in UTC, named and aligned as
    // src/delivery/store/delivery-partitions.ts makes them: from the oldest row's week to a week ahead.
    const weeks = (await q.query(`
      SELECT to_char(s AT TIME ZONE 'UTC', 'YYYYMMDD_HH24MI') AS suffix, s AS "from", s + interval '7 days' AS "to"
      FROM generate_series(
        date_bin('7 days', (SELECT coalesce(min(created_at), now()) FROM deliveries_unpartitioned),
                 '2001-01-01 00:00+00'),
        now() + interval '7 days', interval '7 days') AS s`)) as { suffix: string; from: Date; to: Date }[];
    for (const { suffix, from, to } of weeks) {
      const bounds = `FOR VALUES FROM ('${from.toISOString()}') TO ('${to.toISOString()}')`;
      await q.query(`CREATE TABLE deliveries_p${suffix} PARTITION OF deliveries ${bounds} WITH (fillfactor = 70)`);
      await q.query(`CREATE TABLE delivery_attempts_p${suffix} PARTITION OF delivery_attempts ${bounds}`);
    }
    await q.query(`INSERT INTO deliveries SELECT * FROM deliveries_unpartitioned`);
    await q.query(`
      INSERT INTO delivery_attempts (delivery_id, delivery_created_at, attempt_number, started_at, trigger,
                                     duration_ms, status_code, response_body, error, succeeded)
      SELECT a.delivery_id, d.created_at, a.attempt_number, a.started_at, a.trigger, a.duration_ms, a.status_code,
             a.response_body, a.error, a.succeeded
      FROM delivery_attempts_unpartitioned a JOIN deliveries_unpartitioned d ON d.id = a.delivery_id`);
    await q.query(`DROP TABLE delivery_attempts_unpartitioned`);
    await q.query(`DROP TABLE deliveries_unpartitioned`);

    // The claim and the record name each delivery with its created_at, so they touch only its partitions.
    await q.query(`DROP FUNCTION IF EXISTS claim_delivery_attempts(varchar[], integer)`);
    await q.query(
      `DROP FUNCTION IF EXISTS record_delivery_attempts(varchar[], integer[], varchar[], timestamptz[], integer[],
         integer[], text[], text[], boolean[], varchar[], timestamptz[], timestamptz[], integer, bigint)`,
    );
    await q.query(storeFunction('claim_delivery_attempts'));
    await q.query(storeFunction('record_delivery_attempts'));
  }

  async down(): Promise<void> {
    throw new Error('The partitioned delivery tables are not turned back into plain ones');
  }
}
