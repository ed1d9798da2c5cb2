import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The audit log (DESIGN 10): a workspace's changes, read newest first, by action or not. */
export class AuditEvents1765000000000 implements MigrationInterface {
  name = 'AuditEvents1765000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE audit_events (
        id varchar(32) PRIMARY KEY,
        workspace_id varchar(32) NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        occurred_at timestamptz(3) NOT NULL,
        action varchar(64) NOT NULL,
        actor_type varchar(16) NOT NULL,
        actor_id varchar(32) NOT NULL,
        request_id varchar(128),
        target_type varchar(32) NOT NULL,
        target_id varchar(32) NOT NULL,
        changes jsonb NOT NULL DEFAULT '{}'
      )`);
    // A page is a keyset scan of one of these; retention walks occurred_at alone.
    await q.query(`CREATE INDEX audit_events_page_idx ON audit_events (workspace_id, occurred_at DESC, id DESC)`);
    await q.query(
      `CREATE INDEX audit_events_action_page_idx ON audit_events (workspace_id, action, occurred_at DESC, id DESC)`,
    );
    await q.query(`CREATE INDEX audit_events_age_idx ON audit_events (occurred_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE audit_events`);
  }
}
