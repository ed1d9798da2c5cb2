import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Sample data and filters (DESIGN 11). A webhook's filter is its SQL/JSON path predicate as given;
 * `filter_version` names the filter its counts belong to (each new filter starts from zero, and a
 * submission that read the previous one counts for that one). The counts are split like the calculator's
 * (calculator_submission_counters): a submission adds to the rows of the calculator shard it holds, so no
 * two submissions under way write one row. The listing reads a calculator's submissions newest first by
 * (created_at, id), the keyset of its cursor, from one index that replaces (calculator_id, created_at).
 */
export class SamplesAndFilters1766600000000 implements MigrationInterface {
  name = 'SamplesAndFilters1766600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE webhooks
        ADD COLUMN filter varchar(1000),
        ADD COLUMN filter_version integer NOT NULL DEFAULT 0,
        ADD COLUMN filter_set_at timestamptz(3)`);
    await q.query(`
      CREATE TABLE webhook_filter_counters (
        webhook_id varchar(32) NOT NULL
          CONSTRAINT webhook_filter_counters_webhook_id_fkey REFERENCES webhooks(id) ON DELETE CASCADE,
        filter_version integer NOT NULL,
        calculator_id varchar(32) NOT NULL,
        shard smallint NOT NULL,
        passed bigint NOT NULL DEFAULT 0,
        held_back bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (webhook_id, filter_version, calculator_id, shard)
      )`);
    await q.query(
      `CREATE INDEX submissions_calculator_page_idx ON submissions (calculator_id, created_at DESC, id DESC)`,
    );
    await q.query(`DROP INDEX submissions_calculator_idx`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX submissions_calculator_idx ON submissions (calculator_id, created_at)`);
    await q.query(`DROP INDEX submissions_calculator_page_idx`);
    await q.query(`DROP TABLE webhook_filter_counters`);
    await q.query(`ALTER TABLE webhooks DROP COLUMN filter, DROP COLUMN filter_version, DROP COLUMN filter_set_at`);
  }
}
