import type { MigrationInterface, QueryRunner } from 'typeorm';
import { storeFunction } from '../sql-file.js';

/**
 * The claim takes its webhooks' locks in one statement instead of one per webhook, and the record reads
 * each attempt's delivery once (for the webhooks to lock and the attempts to log) instead of twice: each
 * statement over the partitioned `deliveries` pays PostgreSQL 15's run-time pruning set-up.
 */
export class StoreFewerStatements1766500000000 implements MigrationInterface {
  name = 'StoreFewerStatements1766500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(storeFunction('claim_delivery_attempts'));
    await q.query(storeFunction('record_delivery_attempts'));
  }

  // Same signatures and results as before, so the new definitions serve the previous release as they are.
  async down(): Promise<void> {}
}
