import type { MigrationInterface, QueryRunner } from 'typeorm';
import { readSqlFile } from '../sql-file.js';

const claimFunction = () =>
  readSqlFile(new URL('../../../delivery/store/sql/claim_delivery_attempts.sql', import.meta.url));

/**
 * Per-webhook settings (DESIGN 10): custom request headers, a timeout, an in-flight cap and a retry
 * schedule; NULL timeout and cap follow DELIVERY_TIMEOUT_MS and DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK. The
 * claim returns them with each attempt, so its function is created again (its result gains a column).
 */
export class WebhookSettings1765100000000 implements MigrationInterface {
  name = 'WebhookSettings1765100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE webhooks
        ADD COLUMN headers jsonb NOT NULL DEFAULT '{}',
        ADD COLUMN timeout_ms integer CONSTRAINT webhooks_timeout_ms_check CHECK (timeout_ms BETWEEN 1000 AND 30000),
        ADD COLUMN max_in_flight integer CONSTRAINT webhooks_max_in_flight_check CHECK (max_in_flight BETWEEN 1 AND 100),
        ADD COLUMN retry_schedule varchar(16) NOT NULL DEFAULT 'standard'
          CONSTRAINT webhooks_retry_schedule_check CHECK (retry_schedule IN ('standard', 'short', 'none'))`);
    await q.query(`DROP FUNCTION claim_delivery_attempts`);
    await q.query(claimFunction());
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhooks DROP COLUMN headers, DROP COLUMN timeout_ms, DROP COLUMN max_in_flight,
      DROP COLUMN retry_schedule`);
  }
}
