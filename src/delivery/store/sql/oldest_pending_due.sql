CREATE OR REPLACE FUNCTION public.oldest_pending_due()
 RETURNS timestamp with time zone
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
-- /metrics' oldest pending age (backlog.metrics.ts): the first entry of deliveries_pending_due_idx over the
-- partitions. The SET clauses keep it that read: as a plain statement, a connection's generic plan made
-- while the partitions were empty read every pending delivery on each scrape.
BEGIN
  RETURN (SELECT d.next_attempt_at FROM deliveries d WHERE d.status = 'pending' ORDER BY d.next_attempt_at LIMIT 1);
END $function$
