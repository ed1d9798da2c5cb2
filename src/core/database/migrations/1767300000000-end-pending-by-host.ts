import type { MigrationInterface, QueryRunner } from 'typeorm';
import { storeFunction } from '../sql-file.js';

/**
 * A webhook's DELETE and disable end its pending deliveries through a function planned like the store's
 * others: as a plain statement, a connection's generic plan made on an empty partition read it whole.
 */
export class EndPendingByHost1767300000000 implements MigrationInterface {
  name = 'EndPendingByHost1767300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(storeFunction('end_pending_deliveries'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION end_pending_deliveries(varchar, varchar, timestamptz)`);
  }
}
