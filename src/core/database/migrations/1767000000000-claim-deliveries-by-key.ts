import type { MigrationInterface, QueryRunner } from 'typeorm';
import { storeFunction } from '../sql-file.js';

/**
 * The claim reads its deliveries by key whatever the statistics: planned without them (a new partition),
 * its status test let the planner scan every pending delivery for each claim (sql/claim_delivery_attempts.sql).
 */
export class ClaimDeliveriesByKey1767000000000 implements MigrationInterface {
  name = 'ClaimDeliveriesByKey1767000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(storeFunction('claim_delivery_attempts'));
  }

  // Same signature and results as before, so the new definition serves the previous release as it is.
  async down(): Promise<void> {}
}
