import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The claim function as this migration made it; 1764210000000's down() restores it. */
export const CLAIM_DELIVERY_ATTEMPTS_V1 = `
  CREATE FUNCTION claim_delivery_attempts(p_ids varchar[], p_lease_ms integer)
  RETURNS TABLE (delivery_id varchar, outcome text, attempt_count integer, max_attempts integer,
                 webhook_id varchar, url varchar, secret varchar, submission_id varchar, calculator_id varchar,
                 finished boolean, data jsonb, meta jsonb, created_at timestamptz, updated_at timestamptz)
  LANGUAGE plpgsql VOLATILE AS $$
  #variable_conflict use_column
  DECLARE
    r record;
    v_outcome text;
  BEGIN
    -- A lease is soft state: losing it in a crash only lets another worker claim sooner.
    PERFORM set_config('synchronous_commit', 'off', true);
    -- Locks in one global order, so two claims waiting behind two DELETEs cannot deadlock.
    FOR r IN SELECT d.id AS did, d.webhook_id AS wid FROM deliveries d
             WHERE d.id = ANY(p_ids) ORDER BY hashtext(d.webhook_id), d.id LOOP
      PERFORM pg_advisory_lock_shared(7270, hashtext(r.wid));
      -- Each statement of a VOLATILE function takes a new snapshot: a removal that committed while
      -- this claim waited for the lock is seen here.
      UPDATE deliveries d SET lease_until = clock_timestamp() + make_interval(secs => p_lease_ms / 1000.0)
      FROM webhooks w
      WHERE d.id = r.did AND w.id = d.webhook_id AND w.removed_at IS NULL AND d.status = 'pending'
        AND (d.lease_until IS NULL OR d.lease_until < clock_timestamp());
      IF FOUND THEN
        RETURN QUERY
          SELECT d.id, 'claimed'::text, d.attempt_count, d.max_attempts, w.id, w.url, w.secret,
                 s.id, s.calculator_id, s.finished, s.data, s.meta, s.created_at, s.updated_at
          FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id JOIN submissions s ON s.id = d.submission_id
          WHERE d.id = r.did;
        CONTINUE;
      END IF;
      UPDATE deliveries d SET status = 'cancelled', next_attempt_at = NULL, lease_until = NULL,
                              completed_at = clock_timestamp(), updated_at = clock_timestamp()
      FROM webhooks w
      WHERE d.id = r.did AND w.id = d.webhook_id AND w.removed_at IS NOT NULL AND d.status = 'pending';
      IF FOUND THEN
        v_outcome := 'cancelled';
      ELSIF EXISTS (SELECT 1 FROM deliveries d WHERE d.id = r.did AND d.status = 'pending') THEN
        v_outcome := 'busy';
      ELSE
        v_outcome := 'ended';
      END IF;
      PERFORM pg_advisory_unlock_shared(7270, hashtext(r.wid));
      RETURN QUERY SELECT r.did, v_outcome, NULL::integer, NULL::integer, r.wid, NULL::varchar, NULL::varchar,
                          NULL::varchar, NULL::varchar, NULL::boolean, NULL::jsonb, NULL::jsonb,
                          NULL::timestamptz, NULL::timestamptz;
    END LOOP;
  END $$`;

/**
 * Attempts no longer hold a transaction while the receiver answers. A claim takes the webhook's lock
 * (namespace 7270, WEBHOOK_LOCK_NAMESPACE in core/database/statements.ts) at session level, shared, and leases the
 * delivery; the worker writes the request and then unlocks; the result is recorded later, in a batch.
 * The lease keeps two workers from attempting one delivery at once; it expires by itself if a worker dies.
 */
export class AttemptLease1764100000000 implements MigrationInterface {
  name = 'AttemptLease1764100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE deliveries ADD COLUMN lease_until timestamptz(3) NULL`);
    await q.query(`DROP FUNCTION begin_delivery_attempt(varchar)`);
    await q.query(CLAIM_DELIVERY_ATTEMPTS_V1);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION claim_delivery_attempts(varchar[], integer)`);
    await q.query(`ALTER TABLE deliveries DROP COLUMN lease_until`);
    // The previous attempt path's function, as migration 1763910000000 created it.
    const { BeginDeliveryAttempt1763910000000 } = await import('./1763910000000-begin-delivery-attempt.js');
    await new BeginDeliveryAttempt1763910000000().up(q);
  }
}
