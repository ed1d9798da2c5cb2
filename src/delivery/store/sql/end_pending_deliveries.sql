CREATE OR REPLACE FUNCTION public.end_pending_deliveries(p_webhook_id character varying, p_status character varying, p_at timestamp with time zone)
 RETURNS integer
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
-- cancel and skip (delivery-statements.ts: a webhook's DELETE and disable, the record's disable): the
-- webhook's pending deliveries end as p_status; returns how many. They wait at its url's host, so
-- deliveries_host_due_idx finds them, however long the webhook's history. The SET clauses keep that read:
-- as a plain statement, a connection's generic plan made on an empty partition read the whole partition.
DECLARE
  v_ended integer;
BEGIN
  UPDATE deliveries d SET status = p_status, next_attempt_at = NULL, completed_at = p_at, updated_at = p_at
  WHERE d.host = (SELECT url_destination(w.url) FROM webhooks w WHERE w.id = p_webhook_id)
    AND d.webhook_id = p_webhook_id AND d.status = 'pending';
  GET DIAGNOSTICS v_ended = ROW_COUNT;
  RETURN v_ended;
END $function$
