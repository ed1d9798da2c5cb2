import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * One round trip to start an attempt: take the webhook's shared lock, then read the pending
 * delivery. The function is VOLATILE, so the read gets a snapshot taken after the lock is held and
 * sees a removal that committed while it waited. 7270 is WEBHOOK_LOCK_NAMESPACE (core/database/statements.ts).
 */
export class BeginDeliveryAttempt1763910000000 implements MigrationInterface {
  name = 'BeginDeliveryAttempt1763910000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION begin_delivery_attempt(p_delivery_id varchar)
      RETURNS TABLE (attempt_count integer, max_attempts integer, webhook_id varchar, url varchar, secret varchar,
                     webhook_removed boolean, submission_id varchar, calculator_id varchar, finished boolean,
                     data jsonb, meta jsonb, created_at timestamptz, updated_at timestamptz)
      LANGUAGE plpgsql VOLATILE AS $$
      #variable_conflict use_column
      DECLARE
        v_webhook_id varchar;
      BEGIN
        SELECT d.webhook_id INTO v_webhook_id FROM deliveries d WHERE d.id = p_delivery_id;
        IF NOT FOUND THEN
          RETURN;
        END IF;
        PERFORM pg_advisory_xact_lock_shared(7270, hashtext(v_webhook_id));
        -- SKIP LOCKED: another worker attempting this delivery keeps it.
        RETURN QUERY
          SELECT d.attempt_count, d.max_attempts, w.id, w.url, w.secret, w.removed_at IS NOT NULL,
                 s.id, s.calculator_id, s.finished, s.data, s.meta, s.created_at, s.updated_at
          FROM deliveries d
          JOIN webhooks w ON w.id = d.webhook_id
          JOIN submissions s ON s.id = d.submission_id
          WHERE d.id = p_delivery_id AND d.status = 'pending'
          FOR UPDATE OF d SKIP LOCKED;
      END $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION begin_delivery_attempt(varchar)`);
  }
}
