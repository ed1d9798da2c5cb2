CREATE OR REPLACE FUNCTION public.host_next_due(p_host character varying)
 RETURNS timestamp with time zone
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
#variable_conflict use_column
-- When a host's next delivery falls due (null: nothing pending), for the wake a drain leaves behind it: the
-- least, over the host's webhooks (a loose scan of deliveries_host_due_idx), of their first pending
-- deliveries' due times, or a lease's end while an attempt holds one. Cost: a probe per webhook.
DECLARE
  v_at timestamptz;
BEGIN
  WITH RECURSIVE hooks(wid) AS (
    (SELECT d.webhook_id FROM deliveries d WHERE d.host = p_host AND d.status = 'pending'
     ORDER BY d.webhook_id LIMIT 1)
    UNION ALL
    SELECT (SELECT d.webhook_id FROM deliveries d WHERE d.host = p_host AND d.status = 'pending' AND d.webhook_id > h.wid
            ORDER BY d.webhook_id LIMIT 1)
    FROM hooks h WHERE h.wid IS NOT NULL
  )
  SELECT min(f.at) INTO v_at FROM hooks h
  CROSS JOIN LATERAL (
    -- The first few, as the first may be in flight (leased) with one due behind it.
    SELECT min(GREATEST(x.next_attempt_at, x.lease_until)) AS at FROM (
      SELECT d.next_attempt_at, d.lease_until FROM deliveries d
      WHERE d.host = p_host AND d.webhook_id = h.wid AND d.status = 'pending'
      ORDER BY d.next_attempt_at LIMIT 32
    ) x
  ) f
  WHERE h.wid IS NOT NULL;
  RETURN v_at;
END $function$
