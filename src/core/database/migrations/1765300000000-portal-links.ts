import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Portal links (DESIGN 10): single-use links to the console, found by the hash of their token or session. */
export class PortalLinks1765300000000 implements MigrationInterface {
  name = 'PortalLinks1765300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE portal_links (
        id varchar(32) PRIMARY KEY,
        workspace_id varchar(32) NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        token_hash char(64) NOT NULL UNIQUE,
        session_hash char(64) UNIQUE,
        read_only boolean NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        expires_at timestamptz(3) NOT NULL,
        used_at timestamptz(3),
        revoked_at timestamptz(3)
      )`);
    await q.query(`CREATE INDEX portal_links_page_idx ON portal_links (workspace_id, created_at DESC, id DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE portal_links`);
  }
}
