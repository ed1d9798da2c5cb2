import type { MigrationInterface, QueryRunner } from 'typeorm';
import { storeFunction } from '../sql-file.js';

/**
 * The claim reads each delivery's webhook by key. Over the partitioned `deliveries`, its generic plan had
 * taken a small webhooks table as the outer side of the lease and of the context read, scanning every
 * webhook per claim.
 */
export class ClaimWebhooksByKey1766400000000 implements MigrationInterface {
  name = 'ClaimWebhooksByKey1766400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(storeFunction('claim_delivery_attempts'));
  }

  // Same signature and results as before, so the new definition serves the previous release as it is.
  async down(): Promise<void> {}
}
