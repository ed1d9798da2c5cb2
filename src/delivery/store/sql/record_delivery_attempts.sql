CREATE OR REPLACE FUNCTION public.record_delivery_attempts(character varying[], integer[], character varying[], timestamp with time zone[], integer[], integer[], text[], text[], boolean[], character varying[], timestamp with time zone[], timestamp with time zone[], integer, bigint, timestamp with time zone[])
 RETURNS TABLE(kind text, id character varying, status text, workspace_id character varying)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
#variable_conflict use_column
-- record (delivery-lifecycle.ts): every attempt of the batch is logged and its delivery moves to the
-- attempt's outcome, each webhook's health folded in once; see ATTEMPT_RECORD in delivery-statements.ts.
-- The SET clauses plan it once per connection, by keys only, whatever the tables' sizes. $15 holds each
-- delivery's created_at: the statement reads the batch's range of it, so its generic plan keeps only the
-- partitions of that range when it starts (Subplans Removed), as v_from and v_to are parameters.
DECLARE
  v_from timestamptz;
  v_to timestamptz;
BEGIN
SELECT min(c), max(c) INTO v_from, v_to FROM unnest($15) c;
RETURN QUERY
  WITH input AS (
    SELECT * FROM unnest($1::varchar[], $2::int[], $3::varchar[], $4::timestamptz[], $5::int[], $6::int[],
                         $7::text[], $8::text[], $9::boolean[], $10::varchar[], $11::timestamptz[],
                         $12::timestamptz[], $15::timestamptz[]) WITH ORDINALITY
      AS i(delivery_id, attempt_number, trigger, started_at, duration_ms, status_code, response_body, error,
           succeeded, status, next_attempt_at, finished_at, delivery_created_at, ord)
  ), found AS (
    -- The attempts whose delivery exists, with its webhook: read once for the webhooks to lock and for the
    -- attempts to log (none for a delivery that is gone).
    SELECT i.*, d.webhook_id FROM input i JOIN deliveries d ON d.id = i.delivery_id
    WHERE d.created_at = i.delivery_created_at AND d.created_at BETWEEN v_from AND v_to
  ), locked AS (
    SELECT w.id, w.consecutive_failures, w.failing_since, w.disabled_at, w.removed_at, w.kind FROM webhooks w
    WHERE w.id IN (SELECT f.webhook_id FROM found f)
    ORDER BY w.id FOR NO KEY UPDATE
  ), attempt AS (
    INSERT INTO delivery_attempts (delivery_id, delivery_created_at, attempt_number, trigger, started_at,
                                   duration_ms, status_code, response_body, error, succeeded)
    SELECT f.delivery_id, f.delivery_created_at, f.attempt_number, f.trigger, f.started_at, f.duration_ms,
           f.status_code, f.response_body, f.error, f.succeeded
    FROM found f
    ON CONFLICT DO NOTHING
  ), updated AS (
    UPDATE deliveries d SET
      status = CASE WHEN d.status IN ('cancelled', 'skipped') AND i.status = 'pending' THEN d.status ELSE i.status END,
      next_attempt_at = CASE WHEN d.status IN ('cancelled', 'skipped') THEN NULL ELSE i.next_attempt_at END,
      completed_at = CASE WHEN d.status IN ('cancelled', 'skipped') AND i.status = 'pending' THEN d.completed_at
                          WHEN i.status = 'pending' THEN NULL ELSE i.finished_at END,
      attempt_count = i.attempt_number, last_attempt_at = i.started_at, last_status_code = i.status_code,
      last_error = i.error, updated_at = i.finished_at, lease_until = NULL, next_trigger = 'scheduled'
    FROM input i
    WHERE d.id = i.delivery_id AND d.created_at = i.delivery_created_at AND d.created_at BETWEEN v_from AND v_to
      AND d.attempt_count = i.attempt_number - 1 AND (SELECT count(*) FROM locked) >= 0
    RETURNING d.id, d.status, d.webhook_id, i.ord, i.started_at, i.succeeded, i.status_code, i.error
  ), ordered AS (
    SELECT u.*, max(u.ord) FILTER (WHERE u.succeeded) OVER (PARTITION BY u.webhook_id) AS success_ord FROM updated u
  ), batch AS (
    SELECT o.webhook_id, max(o.started_at) AS last_attempt_at,
           max(o.started_at) FILTER (WHERE o.succeeded) AS last_success_at,
           bool_or(o.succeeded) AS reset, bool_or(o.status_code = 410) AS gone,
           count(*) FILTER (WHERE o.ord > COALESCE(o.success_ord, 0)) AS failures,
           min(o.started_at) FILTER (WHERE o.ord > COALESCE(o.success_ord, 0)) AS first_failure,
           (array_agg(o.error ORDER BY o.ord DESC) FILTER (WHERE NOT o.succeeded))[1] AS last_error
    FROM ordered o GROUP BY o.webhook_id
  ), streak AS (
    SELECT b.*, CASE WHEN b.reset THEN b.failures ELSE w.consecutive_failures + b.failures END AS failures_now,
           CASE WHEN b.failures = 0 THEN NULL WHEN b.reset THEN b.first_failure
                ELSE COALESCE(w.failing_since, b.first_failure) END AS failing_since,
           w.disabled_at IS NULL AND w.removed_at IS NULL AS active,
           w.kind = 'operational' AS operational -- never disabled: it has no enable (DESIGN 10)
    FROM batch b JOIN locked w ON w.id = b.webhook_id
  ), decided AS (
    SELECT s.*, CASE WHEN NOT s.active OR s.operational THEN NULL WHEN s.gone THEN 'gone'
                     WHEN $14::bigint > 0 AND s.failures > 0 AND s.failures_now >= $13::int
                          AND s.failing_since < now() - make_interval(secs => $14::bigint / 1000.0) THEN 'failing'
                END AS disable
    FROM streak s
  ), health AS (
    UPDATE webhooks w SET
      consecutive_failures = d.failures_now, failing_since = d.failing_since,
      last_attempt_at = GREATEST(w.last_attempt_at, d.last_attempt_at),
      last_success_at = GREATEST(w.last_success_at, d.last_success_at),
      last_error = COALESCE(d.last_error, w.last_error),
      disabled_at = CASE WHEN d.disable IS NULL THEN w.disabled_at ELSE now() END,
      disabled_reason = COALESCE(d.disable, w.disabled_reason)
    FROM decided d WHERE w.id = d.webhook_id
    RETURNING w.id, w.workspace_id, d.disable
  )
  SELECT 'delivery'::text, u.id, u.status::text, NULL::varchar FROM updated u
  UNION ALL
  SELECT 'disabled'::text, h.id, h.disable::text, h.workspace_id FROM health h WHERE h.disable IS NOT NULL;
END $function$
