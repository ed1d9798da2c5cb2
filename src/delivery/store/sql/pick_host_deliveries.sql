CREATE OR REPLACE FUNCTION public.pick_host_deliveries(p_host character varying, p_room integer, p_busy_webhooks character varying[], p_busy_counts integer[], p_default_cap integer, p_full_workspaces character varying[], p_lane integer, p_lanes integer, p_after_webhooks character varying[], p_after_times timestamp with time zone[])
 RETURNS TABLE(id character varying, created_at timestamp with time zone, webhook_id character varying, workspace_id character varying, url character varying, next_trigger character varying, trace jsonb, next_attempt_at timestamp with time zone)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
#variable_conflict use_column
-- pick (delivery-lifecycle.ts): up to p_room of a host's due deliveries, in turn by workspace, then by a
-- workspace's webhooks, each webhook within its in-flight cap (its max_in_flight, else p_default_cap, less
-- what the drain has in flight to it: p_busy_*); workspaces at their share of the worker are left out. It
-- reads and locks nothing: the claim (claim_delivery_attempts) leases what it is given, so a delivery two
-- drains both picked goes to one of them, and settles one whose webhook was removed or disabled (a
-- submission that raced the DELETE or the disable) as cancelled or skipped. The host's webhooks with pending deliveries are found by a loose
-- scan of deliveries_host_due_idx (one probe per webhook, not per delivery), and each webhook's due ones by
-- the same index: the cost follows the host's webhooks and the batch, never its backlog. Each webhook gives
-- at most twice its even part of the batch, so a host shared by many webhooks reads a batch's worth.
-- A drain passes, per webhook, the due time of the last delivery it picked (p_after_*): the webhook's
-- earlier ones were picked already, so its scan starts there, past the index entries its sent deliveries
-- left behind until vacuum (a due time is never earlier than the one picked before it, but for a lease
-- that ran out: the next drain starts afresh).
-- A host drained in lanes (several workers) splits by webhook: lane p_lane of p_lanes takes the webhooks
-- whose id hashes to it, so each webhook's cap is held by one drain.
-- Turns count what each webhook and workspace has in flight already: one workspace's burst holds the
-- host's room only until another workspace has a delivery due (fair queuing by attempts in flight).
BEGIN
RETURN QUERY
  WITH RECURSIVE hooks(wid) AS (
    (SELECT d.webhook_id FROM deliveries d WHERE d.host = p_host AND d.status = 'pending'
     ORDER BY d.webhook_id LIMIT 1)
    UNION ALL
    SELECT (SELECT d.webhook_id FROM deliveries d WHERE d.host = p_host AND d.status = 'pending' AND d.webhook_id > h.wid
            ORDER BY d.webhook_id LIMIT 1)
    FROM hooks h WHERE h.wid IS NOT NULL
  ), busy AS (
    SELECT b.wid, b.n FROM unnest(p_busy_webhooks, p_busy_counts) AS b(wid, n)
  ), busy_workspaces AS (
    SELECT w.workspace_id, sum(b.n)::integer AS n FROM busy b
    CROSS JOIN LATERAL (SELECT w.workspace_id FROM webhooks w WHERE w.id = b.wid OFFSET 0) w
    GROUP BY w.workspace_id
  ), after AS (
    SELECT a.wid, a.at FROM unnest(p_after_webhooks, p_after_times) AS a(wid, at)
  ), open AS (
    SELECT w.id, w.workspace_id, w.url, COALESCE(b.n, 0) AS busy, COALESCE(a.at, '-infinity') AS after,
           LEAST(COALESCE(w.max_in_flight, p_default_cap) - COALESCE(b.n, 0), p_room) AS room,
           count(*) OVER () AS hooks
    FROM hooks h
    -- OFFSET 0 keeps this a subquery, run per webhook: read by key whatever the estimates.
    CROSS JOIN LATERAL (SELECT * FROM webhooks w WHERE w.id = h.wid OFFSET 0) w
    LEFT JOIN busy b ON b.wid = w.id
    LEFT JOIN after a ON a.wid = w.id
    WHERE h.wid IS NOT NULL AND NOT w.workspace_id = ANY(p_full_workspaces)
      AND (p_lanes = 1 OR mod(abs(hashtext(w.id)), p_lanes) = p_lane)
  ), due AS (
    SELECT d.id, d.created_at, d.next_attempt_at, o.id AS webhook_id, o.workspace_id, o.url, d.next_trigger, d.trace,
           o.busy + row_number() OVER (PARTITION BY o.id ORDER BY d.next_attempt_at, d.id) AS turn
    FROM open o
    CROSS JOIN LATERAL (
      SELECT d.id, d.created_at, d.next_attempt_at, d.next_trigger, d.trace FROM deliveries d
      WHERE d.host = p_host AND d.webhook_id = o.id AND d.status = 'pending'
        AND d.next_attempt_at >= o.after AND d.next_attempt_at <= clock_timestamp()
        AND (d.lease_until IS NULL OR d.lease_until < clock_timestamp())
      ORDER BY d.next_attempt_at
      LIMIT GREATEST(0, LEAST(o.room, 2 * ceil(p_room::numeric / o.hooks)::integer))
    ) d
  ), ranked AS (
    SELECT due.*, COALESCE(bw.n, 0)
             + row_number() OVER (PARTITION BY due.workspace_id ORDER BY due.turn, due.next_attempt_at) AS ws_turn
    FROM due LEFT JOIN busy_workspaces bw ON bw.workspace_id = due.workspace_id
  )
  SELECT r.id, r.created_at, r.webhook_id, r.workspace_id, r.url, r.next_trigger, r.trace, r.next_attempt_at
  FROM ranked r ORDER BY r.ws_turn, r.next_attempt_at, r.id LIMIT p_room;
END $function$
