import type { MigrationInterface, QueryRunner } from 'typeorm';
import { storeFunction } from '../sql-file.js';

/**
 * The sweeper's page of hosts becomes a function planned like the store's others: as a plain statement,
 * planned on an empty partition and another without statistics, each step sorted every pending delivery.
 */
export class SweepHostsByIndex1767100000000 implements MigrationInterface {
  name = 'SweepHostsByIndex1767100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(storeFunction('overdue_hosts'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION overdue_hosts(varchar, integer)`);
  }
}
