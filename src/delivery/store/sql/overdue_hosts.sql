CREATE OR REPLACE FUNCTION public.overdue_hosts(p_after character varying, p_limit integer)
 RETURNS TABLE(host character varying, at timestamp with time zone)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
#variable_conflict use_column
-- sweep (delivery.sweeper.ts): the hosts with pending deliveries after p_after, p_limit at most, each with
-- its next due time (host_next_due): a loose scan of deliveries_host_due_idx in keyset pages, so its cost
-- follows the hosts with pending deliveries, not the deliveries. The SET clauses keep each step an
-- ordered read of each partition's index: as a plain statement, planned on an empty partition and another
-- without statistics, each step sorted every pending delivery to find the next host.
BEGIN
RETURN QUERY
  WITH RECURSIVE hosts(h) AS (
    (SELECT d.host FROM deliveries d WHERE d.status = 'pending' AND d.host > p_after ORDER BY d.host LIMIT 1)
    UNION ALL
    SELECT (SELECT d.host FROM deliveries d WHERE d.status = 'pending' AND d.host > x.h ORDER BY d.host LIMIT 1)
    FROM hosts x WHERE x.h IS NOT NULL
  ), page AS (
    SELECT x.h FROM hosts x WHERE x.h IS NOT NULL LIMIT p_limit
  )
  SELECT p.h, host_next_due(p.h) FROM page p ORDER BY p.h;
END $function$
