import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Delivery search (DESIGN 10): GET /deliveries by a status code or its class reads the workspace's log in
 * its order within one class, so a rare code is found without walking the whole log. Partial: a delivery
 * gets its code with its first answer, so an insert never writes this index.
 */
export class DeliverySearch1766200000000 implements MigrationInterface {
  name = 'DeliverySearch1766200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE INDEX deliveries_status_code_log_idx
        ON deliveries (workspace_id, (last_status_code / 100), created_at DESC, id DESC)
        WHERE last_status_code IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX deliveries_status_code_log_idx`);
  }
}
