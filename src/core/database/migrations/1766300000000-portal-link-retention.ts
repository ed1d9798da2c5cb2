import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Portal links go once expired for longer than AUDIT_RETENTION: the hourly purge reads them by expiry. */
export class PortalLinkRetention1766300000000 implements MigrationInterface {
  name = 'PortalLinkRetention1766300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX portal_links_expires_idx ON portal_links (expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX portal_links_expires_idx`);
  }
}
