import type { MigrationInterface, QueryRunner } from 'typeorm';
import { storeFunction } from '../sql-file.js';

/**
 * Operational webhooks (DESIGN 10): a receiver is a webhooks row of kind `operational` (its events are its
 * triggers), and its deliveries carry the event they send in `deliveries.event`; the claim returns it.
 */
export class OperationalWebhooks1766100000000 implements MigrationInterface {
  name = 'OperationalWebhooks1766100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE webhooks ADD COLUMN kind varchar(16) NOT NULL DEFAULT 'webhook'
        CONSTRAINT webhooks_kind_check CHECK (kind IN ('webhook', 'operational'))`);
    await q.query(`ALTER TABLE deliveries ADD COLUMN event jsonb`);
    await q.query(`ALTER TABLE deliveries DROP CONSTRAINT deliveries_submission_or_test_check`);
    await q.query(`
      ALTER TABLE deliveries ADD CONSTRAINT deliveries_payload_check
        CHECK (submission_id IS NOT NULL OR test_submission IS NOT NULL OR event IS NOT NULL)`);
    // The claim returns one more column: a new return type cannot be replaced in place.
    await q.query(`DROP FUNCTION claim_delivery_attempts`);
    await q.query(storeFunction('claim_delivery_attempts'));
    await q.query(storeFunction('record_delivery_attempts'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM webhooks WHERE kind = 'operational'`);
    await q.query(`ALTER TABLE deliveries DROP CONSTRAINT deliveries_payload_check`);
    await q.query(`ALTER TABLE deliveries DROP COLUMN event`);
    await q.query(`
      ALTER TABLE deliveries ADD CONSTRAINT deliveries_submission_or_test_check
        CHECK (submission_id IS NOT NULL OR test_submission IS NOT NULL)`);
    await q.query(`ALTER TABLE webhooks DROP COLUMN kind`);
  }
}
