import type { MigrationInterface, QueryRunner } from 'typeorm';
import { storeFunction } from '../sql-file.js';

/**
 * The claim commits its leases synchronously: a lease lost in a crash of Postgres let a second request go
 * out with no attempt logged for the first (DESIGN 5, every request a receiver gets is recorded).
 */
export class DurableLease1766900000000 implements MigrationInterface {
  name = 'DurableLease1766900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(storeFunction('claim_delivery_attempts'));
  }

  // Same signature and results as before, so the new definition serves the previous release as it is.
  async down(): Promise<void> {}
}
