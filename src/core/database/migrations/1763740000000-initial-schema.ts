import type { MigrationInterface, QueryRunner } from 'typeorm';

export class InitialSchema1763740000000 implements MigrationInterface {
  name = 'InitialSchema1763740000000';

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
        submissions_count integer NOT NULL DEFAULT 0,
        last_submission_at timestamptz(3),
        new_element_count jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        removed_at timestamptz(3)
      )`);
    await q.query(
      `CREATE INDEX calculators_workspace_list_idx ON calculators (workspace_id, created_at, id) WHERE removed_at IS NULL`,
    );
    await q.query(`
      CREATE TABLE webhooks (
        id varchar(32) PRIMARY KEY,
        workspace_id varchar(32) NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        name varchar(255) NOT NULL DEFAULT '',
        url varchar(2048) NOT NULL,
        source varchar(32) NOT NULL DEFAULT 'user',
        secret varchar(128) NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        removed_at timestamptz(3)
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
        workspace_id varchar(32) NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        calculator_id varchar(32) NOT NULL REFERENCES calculators(id) ON DELETE CASCADE,
        finished boolean NOT NULL DEFAULT true,
        data jsonb NOT NULL,
        meta jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX submissions_calculator_idx ON submissions (calculator_id, created_at)`);
    await q.query(`
      CREATE TABLE deliveries (
        id varchar(32) PRIMARY KEY,
        workspace_id varchar(32) NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        webhook_id varchar(32) NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
        submission_id varchar(32) NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
        status varchar(16) NOT NULL DEFAULT 'pending'
          CHECK (status IN ('pending', 'succeeded', 'failed', 'cancelled')),
        attempt_count integer NOT NULL DEFAULT 0,
        max_attempts integer NOT NULL,
        next_attempt_at timestamptz(3),
        last_attempt_at timestamptz(3),
        last_status_code integer,
        last_error text,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        completed_at timestamptz(3)
      )`);
    await q.query(`CREATE INDEX deliveries_webhook_log_idx ON deliveries (webhook_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX deliveries_submission_idx ON deliveries (submission_id)`);
    await q.query(`CREATE INDEX deliveries_pending_due_idx ON deliveries (next_attempt_at) WHERE status = 'pending'`);
    await q.query(`
      CREATE TABLE delivery_attempts (
        id varchar(32) PRIMARY KEY,
        delivery_id varchar(32) NOT NULL REFERENCES deliveries(id) ON DELETE CASCADE,
        attempt_number integer NOT NULL,
        trigger varchar(16) NOT NULL DEFAULT 'scheduled',
        started_at timestamptz(3) NOT NULL,
        duration_ms integer NOT NULL,
        status_code integer,
        response_body text,
        error text,
        succeeded boolean NOT NULL
      )`);
    await q.query(`CREATE INDEX delivery_attempts_delivery_idx ON delivery_attempts (delivery_id, attempt_number)`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of [
      'delivery_attempts',
      'deliveries',
      'submissions',
      'webhook_triggers',
      'webhook_calculators',
      'webhooks',
      'calculators',
      'api_keys',
      'workspaces',
    ]) {
      await q.query(`DROP TABLE IF EXISTS ${table}`);
    }
  }
}
