import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The schema of DESIGN section 7 (operating deliveries): a webhook's health and pause state and its
 * previous signing secret during a rotation; the `skipped` delivery status; test deliveries, which carry
 * their sample submission instead of referring to a stored one; the calculator on each delivery (the
 * workspace log filters by it); the workspace log's and retention's indexes; persisted recoveries;
 * idempotency keys. Every change is additive (new nullable or defaulted columns, a wider check), so an
 * older process still running during a rolling deploy keeps working.
 */
export class OperateDeliveries1764200000000 implements MigrationInterface {
  name = 'OperateDeliveries1764200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE webhooks
        ADD COLUMN disabled_at timestamptz(3) NULL,
        ADD COLUMN disabled_reason varchar(16) NULL
          CONSTRAINT webhooks_disabled_reason_check CHECK (disabled_reason IN ('manual', 'gone', 'failing')),
        ADD COLUMN consecutive_failures integer NOT NULL DEFAULT 0,
        ADD COLUMN failing_since timestamptz(3) NULL,
        ADD COLUMN last_attempt_at timestamptz(3) NULL,
        ADD COLUMN last_success_at timestamptz(3) NULL,
        ADD COLUMN last_error text NULL,
        ADD COLUMN previous_secret varchar(128) NULL,
        ADD COLUMN previous_secret_expires_at timestamptz(3) NULL`);

    await q.query(`ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check`);
    await q.query(`
      ALTER TABLE deliveries
        ADD CONSTRAINT deliveries_status_check
          CHECK (status IN ('pending', 'succeeded', 'failed', 'cancelled', 'skipped')),
        ALTER COLUMN submission_id DROP NOT NULL,
        ADD COLUMN test_submission jsonb NULL,
        ADD COLUMN calculator_id varchar(32) NULL,
        ADD CONSTRAINT deliveries_submission_or_test_check
          CHECK (submission_id IS NOT NULL OR test_submission IS NOT NULL)`);
    await q.query(`
      UPDATE deliveries d SET calculator_id = s.calculator_id FROM submissions s WHERE s.id = d.submission_id`);
    // GET /deliveries: a workspace's deliveries newest first, keyset-paged on (created_at, id).
    await q.query(`CREATE INDEX deliveries_workspace_log_idx ON deliveries (workspace_id, created_at DESC, id DESC)`);
    // Retention deletes ended deliveries by age; pending ones (completed_at NULL) are never in this index.
    await q.query(`CREATE INDEX deliveries_ended_idx ON deliveries (completed_at) WHERE completed_at IS NOT NULL`);

    await q.query(`
      CREATE TABLE recoveries (
        id varchar(32) PRIMARY KEY,
        workspace_id varchar(32) NOT NULL
          CONSTRAINT recoveries_workspace_id_fkey REFERENCES workspaces(id) ON DELETE CASCADE,
        webhook_id varchar(32) NOT NULL
          CONSTRAINT recoveries_webhook_id_fkey REFERENCES webhooks(id) ON DELETE CASCADE,
        since timestamptz(3) NOT NULL,
        until timestamptz(3) NOT NULL,
        status varchar(16) NOT NULL DEFAULT 'running'
          CONSTRAINT recoveries_status_check CHECK (status IN ('running', 'completed', 'cancelled')),
        matched integer NOT NULL DEFAULT 0,
        requeued integer NOT NULL DEFAULT 0,
        cursor_created_at timestamptz(3) NULL,
        cursor_id varchar(32) NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        completed_at timestamptz(3) NULL
      )`);
    await q.query(`CREATE INDEX recoveries_running_idx ON recoveries (created_at) WHERE status = 'running'`);
    await q.query(`CREATE INDEX recoveries_webhook_idx ON recoveries (webhook_id)`);
    await q.query(`CREATE INDEX recoveries_ended_idx ON recoveries (completed_at) WHERE completed_at IS NOT NULL`);

    await q.query(`
      CREATE TABLE idempotency_keys (
        workspace_id varchar(32) NOT NULL
          CONSTRAINT idempotency_keys_workspace_id_fkey REFERENCES workspaces(id) ON DELETE CASCADE,
        key varchar(255) NOT NULL,
        method varchar(8) NOT NULL,
        path varchar(2048) NOT NULL,
        body_hash varchar(64) NOT NULL,
        status_code integer NULL,
        response_body text NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        completed_at timestamptz(3) NULL,
        expires_at timestamptz(3) NOT NULL,
        CONSTRAINT idempotency_keys_pkey PRIMARY KEY (workspace_id, key)
      )`);
    await q.query(`CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE idempotency_keys`);
    await q.query(`DROP TABLE recoveries`);
    await q.query(`DROP INDEX deliveries_ended_idx`);
    await q.query(`DROP INDEX deliveries_workspace_log_idx`);
    await q.query(`DELETE FROM deliveries WHERE submission_id IS NULL`);
    await q.query(`UPDATE deliveries SET status = 'cancelled' WHERE status = 'skipped'`);
    await q.query(`
      ALTER TABLE deliveries
        DROP CONSTRAINT deliveries_submission_or_test_check,
        DROP COLUMN calculator_id,
        DROP COLUMN test_submission,
        ALTER COLUMN submission_id SET NOT NULL,
        DROP CONSTRAINT deliveries_status_check,
        ADD CONSTRAINT deliveries_status_check CHECK (status IN ('pending', 'succeeded', 'failed', 'cancelled'))`);
    await q.query(`
      ALTER TABLE webhooks
        DROP COLUMN previous_secret_expires_at, DROP COLUMN previous_secret, DROP COLUMN last_error,
        DROP COLUMN last_success_at, DROP COLUMN last_attempt_at, DROP COLUMN failing_since,
        DROP COLUMN consecutive_failures, DROP COLUMN disabled_reason, DROP COLUMN disabled_at`);
  }
}
