import type { MigrationInterface, QueryRunner } from 'typeorm';
import { storeFunction } from '../sql-file.js';

/**
 * The schema as of the first release, in one migration. From here on migrations are append-only: a
 * change is a new migration, never an edit of this one.
 */
export class Baseline1764800000000 implements MigrationInterface {
  name = 'Baseline1764800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE workspaces (
        id varchar(32) PRIMARY KEY,
        name varchar(255) NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE api_keys (
        id varchar(32) PRIMARY KEY,
        workspace_id varchar(32) NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        prefix varchar(32) NOT NULL UNIQUE,
        key_hash char(64) NOT NULL UNIQUE,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        revoked_at timestamptz(3),
        last_used_at timestamptz(3)
      )`);
    await q.query(`CREATE INDEX api_keys_workspace_idx ON api_keys (workspace_id, created_at)`);
    // Every revoked, re-pointed or deleted key is announced (payload: its hash) when its transaction
    // commits, whoever made the change, so api processes drop it from their key cache at once.
    await q.query(`
      CREATE FUNCTION notify_api_key_revoked() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('api_key_revoked', OLD.key_hash);
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER api_keys_notify_revoked
      AFTER UPDATE OF revoked_at, key_hash, workspace_id OR DELETE ON api_keys
      FOR EACH ROW EXECUTE FUNCTION notify_api_key_revoked()`);

    await q.query(`
      CREATE TABLE calculators (
        id varchar(32) PRIMARY KEY,
        workspace_id varchar(32) NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        folder_id varchar(32) NOT NULL,
        name varchar(255) NOT NULL,
        slug text,
        status varchar(32) NOT NULL DEFAULT 'draft',
        elements jsonb NOT NULL DEFAULT '[]',
        layouts jsonb NOT NULL DEFAULT '{"lg":[],"md":[],"sm":[]}',
        variables jsonb NOT NULL DEFAULT '[]',
        submit_actions jsonb NOT NULL DEFAULT '{}',
        theme_id varchar(64) NOT NULL DEFAULT 'default',
        template_visibility text,
        template_calculator_id varchar(32),
        clones_count integer NOT NULL DEFAULT 0,
        impressions_count integer NOT NULL DEFAULT 0,
        last_impression_at timestamptz(3),
        new_element_count jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        removed_at timestamptz(3)
      )`);
    await q.query(
      `CREATE INDEX calculators_workspace_list_idx ON calculators (workspace_id, created_at, id) WHERE removed_at IS NULL`,
    );
    // A submission bumps one shard, so submissions to one calculator do not queue on one row's lock.
    await q.query(`
      CREATE TABLE calculator_submission_counters (
        calculator_id varchar(32) NOT NULL
          CONSTRAINT calculator_submission_counters_calculator_id_fkey REFERENCES calculators(id) ON DELETE CASCADE,
        shard smallint NOT NULL,
        count bigint NOT NULL DEFAULT 0,
        last_submission_at timestamptz(3),
        PRIMARY KEY (calculator_id, shard)
      )`);

    await q.query(`
      CREATE TABLE webhooks (
        id varchar(32) PRIMARY KEY,
        workspace_id varchar(32) NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        name varchar(255) NOT NULL DEFAULT '',
        url varchar(2048) NOT NULL,
        source varchar(32) NOT NULL DEFAULT 'user',
        secret varchar(128) NOT NULL,
        previous_secret varchar(128),
        previous_secret_expires_at timestamptz(3),
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        removed_at timestamptz(3),
        disabled_at timestamptz(3),
        disabled_reason varchar(16) CONSTRAINT webhooks_disabled_reason_check
          CHECK (disabled_reason IN ('manual', 'gone', 'failing')),
        consecutive_failures integer NOT NULL DEFAULT 0,
        failing_since timestamptz(3),
        last_attempt_at timestamptz(3),
        last_success_at timestamptz(3),
        last_error text
      )`);
    await q.query(
      `CREATE INDEX webhooks_workspace_active_idx ON webhooks (workspace_id, created_at, id) WHERE removed_at IS NULL`,
    );
    await q.query(`
      CREATE TABLE webhook_calculators (
        webhook_id varchar(32) NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
        calculator_id varchar(32) NOT NULL REFERENCES calculators(id) ON DELETE CASCADE,
        PRIMARY KEY (webhook_id, calculator_id)
      )`);
    await q.query(`CREATE INDEX webhook_calculators_calculator_idx ON webhook_calculators (calculator_id, webhook_id)`);
    await q.query(`
      CREATE TABLE webhook_triggers (
        webhook_id varchar(32) NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
        type varchar(32) NOT NULL,
        PRIMARY KEY (webhook_id, type)
      )`);

    await q.query(`
      CREATE TABLE submissions (
        id varchar(32) PRIMARY KEY,
        workspace_id varchar(32) NOT NULL,
        calculator_id varchar(32) NOT NULL REFERENCES calculators(id) ON DELETE CASCADE,
        finished boolean NOT NULL DEFAULT true,
        data jsonb NOT NULL,
        meta jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX submissions_calculator_idx ON submissions (calculator_id, created_at)`);

    // 30% of each page free, so a claim's lease update is HOT: no new entries in the six indexes.
    await q.query(`
      CREATE TABLE deliveries (
        id varchar(32) PRIMARY KEY,
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
        CONSTRAINT deliveries_submission_or_test_check CHECK (submission_id IS NOT NULL OR test_submission IS NOT NULL)
      ) WITH (fillfactor = 70)`);
    await q.query(`CREATE INDEX deliveries_webhook_log_idx ON deliveries (webhook_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX deliveries_workspace_log_idx ON deliveries (workspace_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX deliveries_submission_idx ON deliveries (submission_id)`);
    await q.query(`CREATE INDEX deliveries_pending_due_idx ON deliveries (next_attempt_at) WHERE status = 'pending'`);
    await q.query(`CREATE INDEX deliveries_ended_idx ON deliveries (completed_at) WHERE completed_at IS NOT NULL`);
    // An attempt is named by its delivery, its number and its start (a lease that ran out can repeat a number).
    await q.query(`
      CREATE TABLE delivery_attempts (
        delivery_id varchar(32) NOT NULL
          CONSTRAINT delivery_attempts_delivery_id_fkey REFERENCES deliveries(id) ON DELETE CASCADE,
        attempt_number integer NOT NULL,
        started_at timestamptz(3) NOT NULL,
        trigger varchar(16) NOT NULL DEFAULT 'scheduled',
        duration_ms integer NOT NULL,
        status_code integer,
        response_body text,
        error text,
        succeeded boolean NOT NULL,
        PRIMARY KEY (delivery_id, attempt_number, started_at)
      )`);

    await q.query(`
      CREATE TABLE recoveries (
        id varchar(32) PRIMARY KEY,
        workspace_id varchar(32) NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        webhook_id varchar(32) NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
        since timestamptz(3) NOT NULL,
        until timestamptz(3) NOT NULL,
        status varchar(16) NOT NULL DEFAULT 'running' CONSTRAINT recoveries_status_check
          CHECK (status IN ('running', 'completed', 'cancelled')),
        matched integer NOT NULL DEFAULT 0,
        requeued integer NOT NULL DEFAULT 0,
        cursor_created_at timestamptz(3),
        cursor_id varchar(32),
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        completed_at timestamptz(3)
      )`);
    await q.query(`CREATE INDEX recoveries_running_idx ON recoveries (created_at) WHERE status = 'running'`);
    await q.query(`CREATE INDEX recoveries_webhook_idx ON recoveries (webhook_id)`);
    await q.query(`CREATE INDEX recoveries_ended_idx ON recoveries (completed_at) WHERE completed_at IS NOT NULL`);

    await q.query(`
      CREATE TABLE idempotency_keys (
        workspace_id varchar(32) NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        key varchar(255) NOT NULL,
        method varchar(8) NOT NULL,
        path varchar(2048) NOT NULL,
        body_hash varchar(64) NOT NULL,
        status_code integer,
        response_body text,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        completed_at timestamptz(3),
        expires_at timestamptz(3) NOT NULL,
        PRIMARY KEY (workspace_id, key)
      )`);
    await q.query(`CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at)`);

    await q.query(storeFunction('claim_delivery_attempts'));
    await q.query(storeFunction('record_delivery_attempts'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION record_delivery_attempts`);
    await q.query(`DROP FUNCTION claim_delivery_attempts`);
    for (const table of [
      'idempotency_keys',
      'recoveries',
      'delivery_attempts',
      'deliveries',
      'submissions',
      'webhook_triggers',
      'webhook_calculators',
      'webhooks',
      'calculator_submission_counters',
      'calculators',
      'api_keys',
      'workspaces',
    ]) {
      await q.query(`DROP TABLE ${table}`);
    }
    await q.query(`DROP FUNCTION notify_api_key_revoked`);
  }
}
