import type { MigrationInterface, QueryRunner } from 'typeorm';
import { storeFunction } from '../sql-file.js';

/**
 * /metrics' oldest pending age becomes a function planned like the store's others: as a plain statement, a
 * connection's generic plan made on empty partitions read every pending delivery.
 */
export class OldestPendingByIndex1767200000000 implements MigrationInterface {
  name = 'OldestPendingByIndex1767200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(storeFunction('oldest_pending_due'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION oldest_pending_due()`);
  }
}
