import type { MigrationInterface, QueryRunner } from 'typeorm';
import { CLAIM_DELIVERY_ATTEMPTS_V1 } from './1764100000000-attempt-lease.js';

/** The function as this migration made it (the next one's `down` restores it). */
export const CLAIM_DELIVERY_ATTEMPTS_V2 = `
  CREATE FUNCTION claim_delivery_attempts(p_ids varchar[], p_lease_ms integer)
  RETURNS TABLE (delivery_id varchar, outcome text, attempt_count integer, max_attempts integer,
                 webhook_id varchar, url varchar, secret varchar, submission_id varchar, calculator_id varchar,
                 finished boolean, data jsonb, meta jsonb, created_at timestamptz, updated_at timestamptz,
                 previous_secret varchar)
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
      -- Each statement of a VOLATILE function takes a new snapshot: a removal or a disabling that
      -- committed while this claim waited for the lock is seen here.
      UPDATE deliveries d SET lease_until = clock_timestamp() + make_interval(secs => p_lease_ms / 1000.0)
      FROM webhooks w
      WHERE d.id = r.did AND w.id = d.webhook_id AND w.removed_at IS NULL AND w.disabled_at IS NULL
        AND d.status = 'pending' AND (d.lease_until IS NULL OR d.lease_until < clock_timestamp());
      IF FOUND THEN
        -- A test delivery (submission_id NULL) carries its sample submission as the API shows it.
        RETURN QUERY
          SELECT d.id, 'claimed'::text, d.attempt_count, d.max_attempts, w.id, w.url, w.secret,
                 COALESCE(s.id, d.test_submission->>'id')::varchar,
                 COALESCE(s.calculator_id, d.test_submission->>'calculatorId')::varchar,
                 COALESCE(s.finished, (d.test_submission->>'finished')::boolean),
                 COALESCE(s.data, d.test_submission->'data'), COALESCE(s.meta, d.test_submission->'meta'),
                 COALESCE(s.created_at, (d.test_submission->>'createdAt')::timestamptz),
                 COALESCE(s.updated_at, (d.test_submission->>'updatedAt')::timestamptz),
                 CASE WHEN w.previous_secret_expires_at > clock_timestamp() THEN w.previous_secret END
          FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id
          LEFT JOIN submissions s ON s.id = d.submission_id
          WHERE d.id = r.did;
        CONTINUE;
      END IF;
      UPDATE deliveries d SET status = CASE WHEN w.removed_at IS NOT NULL THEN 'cancelled' ELSE 'skipped' END,
                              next_attempt_at = NULL, lease_until = NULL,
                              completed_at = clock_timestamp(), updated_at = clock_timestamp()
      FROM webhooks w
      WHERE d.id = r.did AND w.id = d.webhook_id AND (w.removed_at IS NOT NULL OR w.disabled_at IS NOT NULL)
        AND d.status = 'pending'
      RETURNING d.status INTO v_outcome;
      IF v_outcome IS NOT NULL THEN
        NULL;
      ELSIF EXISTS (SELECT 1 FROM deliveries d WHERE d.id = r.did AND d.status = 'pending') THEN
        v_outcome := 'busy';
      ELSE
        v_outcome := 'ended';
      END IF;
      PERFORM pg_advisory_unlock_shared(7270, hashtext(r.wid));
      RETURN QUERY SELECT r.did, v_outcome, NULL::integer, NULL::integer, r.wid, NULL::varchar, NULL::varchar,
                          NULL::varchar, NULL::varchar, NULL::boolean, NULL::jsonb, NULL::jsonb,
                          NULL::timestamptz, NULL::timestamptz, NULL::varchar;
      v_outcome := NULL;
    END LOOP;
  END $$`;

/**
 * claim_delivery_attempts for DESIGN 7.1, 7.4 and 7.5: a delivery of a disabled webhook is never
 * claimed (it becomes `skipped`), a test delivery's payload comes from its test_submission (no stored
 * submission), and the previous signing secret is returned while its rotation overlap lasts. One more
 * column than before: an older worker still calling it during a rolling deploy ignores it.
 */
export class ClaimSkipsDisabled1764210000000 implements MigrationInterface {
  name = 'ClaimSkipsDisabled1764210000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION claim_delivery_attempts(varchar[], integer)`);
    await q.query(CLAIM_DELIVERY_ATTEMPTS_V2);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION claim_delivery_attempts(varchar[], integer)`);
    await q.query(CLAIM_DELIVERY_ATTEMPTS_V1);
  }
}
