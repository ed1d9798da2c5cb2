CREATE OR REPLACE FUNCTION public.claim_delivery_attempts(p_ids character varying[], p_created_at timestamp with time zone[], p_lease_ms integer)
 RETURNS TABLE(delivery_id character varying, outcome text, attempt_count integer, max_attempts integer, webhook_id character varying, url character varying, secret character varying, submission_id character varying, calculator_id character varying, finished boolean, data jsonb, meta jsonb, created_at timestamp with time zone, updated_at timestamp with time zone, previous_secret character varying, settings jsonb, event jsonb)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
#variable_conflict use_column
-- claim (delivery-lifecycle.ts): takes each webhook's fence lock shared, at session level (the caller
-- unlocks once its requests are written), then leases what may be attempted with a snapshot from after
-- every lock; the rest is settled: cancelled (webhook removed), skipped (disabled), busy or ended. Locks
-- go in one global order (hashtext, then id) so two claims behind two DELETEs cannot deadlock. The SET
-- clauses plan it once per connection, by keys only, whatever the tables' sizes. p_created_at holds each
-- delivery's created_at: every statement reads the batch's range of it, so its generic plan keeps only
-- the partitions of that range when it starts (Subplans Removed), as plpgsql's variables are parameters.
-- Webhooks are read by key from each delivery (a subquery, or w.id = ANY(...) beside the join): a generic
-- plan costs a partitioned table's rows at one per partition, and could otherwise scan every webhook.
-- Deliveries are read by key too: their status is tested as COALESCE(status, '') = 'pending', which no
-- partial index on pending deliveries matches. Planned without statistics (a new partition), a plain
-- status = 'pending' made the partial index look tiny, and each claim scanned every pending delivery.
DECLARE
  v_from timestamptz;
  v_to timestamptz;
  v_webhooks varchar[];
  v_claimed varchar[];
  v_held varchar[];
BEGIN
  -- The lease is the log's only trace of a request that goes out before its record: it must survive a
  -- crash of Postgres (else a second request goes out with no attempt logged), whatever the server's default.
  PERFORM set_config('synchronous_commit', 'on', true);
  SELECT min(c), max(c) INTO v_from, v_to FROM unnest(p_created_at) c;
  SELECT array_agg(x.wid ORDER BY hashtext(x.wid), x.wid) INTO v_webhooks
  FROM (SELECT DISTINCT d.webhook_id AS wid FROM deliveries d WHERE d.id = ANY(p_ids) AND d.created_at BETWEEN v_from AND v_to) x;
  IF v_webhooks IS NULL THEN
    RETURN; -- none of the ids is a delivery: the caller treats each as ended
  END IF;
  -- In one statement, not one per webhook: the scan yields the array in its order, each lock taken in turn.
  PERFORM pg_advisory_lock_shared({{DatabaseLock.WebhookFence}}, hashtext(l.w))
  FROM unnest(v_webhooks) WITH ORDINALITY AS l(w, n) ORDER BY l.n;
  -- A lease that ran out was a worker's that stopped before recording its attempt, which the receiver may
  -- have got: that attempt is logged now, its outcome unknown. It is not counted against the schedule (it
  -- may never have gone out), so the delivery keeps the attempts it had left. The row lock makes it once:
  -- a second claim re-reads lease_until as NULL.
  WITH stale AS (
    UPDATE deliveries d SET attempt_count = d.attempt_count + 1, max_attempts = d.max_attempts + 1,
      lease_until = NULL, last_attempt_at = o.next_attempt_at, last_status_code = NULL, last_error = o.error,
      updated_at = clock_timestamp()
    FROM (SELECT x.id, x.created_at, x.lease_until, x.next_attempt_at,
                 'The worker sending this attempt stopped before recording its outcome; the receiver may have got it'::text AS error
          FROM deliveries x
          WHERE x.id = ANY(p_ids) AND x.created_at BETWEEN v_from AND v_to AND COALESCE(x.status, '') = 'pending'
            AND x.lease_until < clock_timestamp()) o
    WHERE d.id = o.id AND d.created_at = o.created_at AND d.created_at BETWEEN v_from AND v_to
      AND d.lease_until = o.lease_until
    RETURNING d.id, d.created_at, d.attempt_count, o.next_attempt_at AS started_at, o.error
  )
  INSERT INTO delivery_attempts (delivery_id, delivery_created_at, attempt_number, trigger, started_at, duration_ms,
                                 status_code, response_body, error, succeeded)
  SELECT s.id, s.created_at, s.attempt_count, 'scheduled', s.started_at, 0, NULL, NULL, s.error, false FROM stale s
  ON CONFLICT DO NOTHING;
  -- Each statement of a VOLATILE function takes a new snapshot: a removal or a disabling that
  -- committed while this claim waited for a lock is seen here.
  WITH leased AS (
    -- A webhook's own timeout may outlast DELIVERY_TIMEOUT_MS: its lease covers that attempt too.
    UPDATE deliveries d
    SET lease_until = clock_timestamp() + make_interval(secs => GREATEST(p_lease_ms,
          2 * (SELECT w.timeout_ms FROM webhooks w WHERE w.id = d.webhook_id) + 10000) / 1000.0)
    WHERE d.id = ANY(p_ids) AND d.created_at BETWEEN v_from AND v_to
      AND COALESCE(d.status, '') = 'pending' AND d.lease_until IS NULL AND d.next_attempt_at <= clock_timestamp()
      AND (SELECT w.removed_at IS NULL AND w.disabled_at IS NULL FROM webhooks w WHERE w.id = d.webhook_id)
    RETURNING d.id, d.webhook_id
  )
  SELECT array_agg(l.id), array_agg(DISTINCT l.webhook_id) INTO v_claimed, v_held FROM leased l;
  v_claimed := COALESCE(v_claimed, '{}');
  v_held := COALESCE(v_held, '{}');
  -- A test delivery (submission_id NULL) carries its sample submission as the API shows it.
  RETURN QUERY
    SELECT d.id, 'claimed'::text, d.attempt_count, d.max_attempts, w.id, w.url, w.secret,
           COALESCE(s.id, d.test_submission->>'id')::varchar,
           COALESCE(s.calculator_id, d.test_submission->>'calculatorId')::varchar,
           COALESCE(s.finished, (d.test_submission->>'finished')::boolean),
           COALESCE(s.data, d.test_submission->'data'), COALESCE(s.meta, d.test_submission->'meta'),
           COALESCE(s.created_at, (d.test_submission->>'createdAt')::timestamptz),
           COALESCE(s.updated_at, (d.test_submission->>'updatedAt')::timestamptz),
           CASE WHEN w.previous_secret_expires_at > clock_timestamp() THEN w.previous_secret END,
           -- The webhook's settings (DESIGN 10), read with its row: no other query per attempt.
           jsonb_build_object('headers', w.headers, 'timeoutMs', w.timeout_ms, 'maxInFlight', w.max_in_flight,
                              'retrySchedule', w.retry_schedule),
           d.event -- an operational event's delivery: sent as it is
    FROM deliveries d
    -- OFFSET 0 keeps this a subquery, run per delivery: the webhook is read by key whatever the estimates.
    CROSS JOIN LATERAL (SELECT * FROM webhooks w WHERE w.id = d.webhook_id OFFSET 0) w
    LEFT JOIN submissions s ON s.id = d.submission_id
    WHERE d.id = ANY(v_claimed) AND d.created_at BETWEEN v_from AND v_to;
  IF cardinality(v_claimed) = cardinality(p_ids) THEN
    RETURN; -- every id leased: the usual case
  END IF;
  RETURN QUERY
    WITH stopped AS (
      UPDATE deliveries d SET status = CASE WHEN w.removed_at IS NOT NULL THEN 'cancelled' ELSE 'skipped' END,
                              next_attempt_at = NULL, lease_until = NULL,
                              completed_at = clock_timestamp(), updated_at = clock_timestamp()
      FROM webhooks w
      WHERE d.id = ANY(p_ids) AND d.created_at BETWEEN v_from AND v_to AND NOT d.id = ANY(v_claimed)
        AND w.id = ANY(v_webhooks) AND w.id = d.webhook_id
        AND (w.removed_at IS NOT NULL OR w.disabled_at IS NOT NULL) AND COALESCE(d.status, '') = 'pending'
      RETURNING d.id, d.status::text AS status, d.webhook_id
    )
    SELECT st.id, st.status, NULL::integer, NULL::integer, st.webhook_id, NULL::varchar, NULL::varchar,
           NULL::varchar, NULL::varchar, NULL::boolean, NULL::jsonb, NULL::jsonb,
           NULL::timestamptz, NULL::timestamptz, NULL::varchar, NULL::jsonb, NULL::jsonb
    FROM stopped st
    UNION ALL
    -- Read with the snapshot from before "stopped" ran, hence the exclusion.
    SELECT d.id, CASE WHEN d.status = 'pending' THEN 'busy' ELSE 'ended' END, NULL::integer, NULL::integer,
           d.webhook_id, NULL::varchar, NULL::varchar, NULL::varchar, NULL::varchar, NULL::boolean,
           NULL::jsonb, NULL::jsonb, NULL::timestamptz, NULL::timestamptz, NULL::varchar, NULL::jsonb, NULL::jsonb
    FROM deliveries d
    WHERE d.id = ANY(p_ids) AND d.created_at BETWEEN v_from AND v_to AND NOT d.id = ANY(v_claimed)
      AND d.id NOT IN (SELECT st.id FROM stopped st);
  PERFORM pg_advisory_unlock_shared({{DatabaseLock.WebhookFence}}, hashtext(w))
  FROM unnest(v_webhooks) w WHERE NOT w = ANY(v_held);
END $function$
