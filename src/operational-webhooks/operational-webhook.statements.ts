import { prepared } from '../core/database/prepared.js';

/*
 * Operational webhooks are webhooks rows of kind `operational` whose triggers are their events, so the
 * delivery engine sends to them as to any webhook. SQL for the same reasons as webhook.statements.ts;
 * the removal, which ends deliveries, is the delivery store's.
 */

/**
 * Runs after WORKSPACE_REGISTRATION_LOCK in its transaction, so the cap holds under concurrent requests.
 * Parameters: id, workspace, url, secret, events, now, cap. Returns the count before, inserted or not.
 */
export const OPERATIONAL_WEBHOOK_REGISTER = prepared(
  'operational_webhook_register',
  `WITH active AS (
     SELECT count(*)::int AS n FROM webhooks WHERE workspace_id = $2 AND removed_at IS NULL AND kind = 'operational'
   ), hook AS (
     INSERT INTO webhooks (id, workspace_id, url, secret, kind, created_at, updated_at)
     SELECT $1, $2, $3, $4, 'operational', $6, $6 WHERE (SELECT n FROM active) < $7
     RETURNING id
   ), triggered AS (
     INSERT INTO webhook_triggers (webhook_id, type) SELECT hook.id, t FROM hook, unnest($5::varchar[]) t
   )
   SELECT (SELECT n FROM active) AS active`,
);

const SELECT = `
  SELECT w.id, w.url, w.created_at AS "createdAt", w.updated_at AS "updatedAt", w.last_attempt_at AS "lastAttemptAt",
         w.last_success_at AS "lastSuccessAt", w.last_error AS "lastError",
         ARRAY(SELECT t.type FROM webhook_triggers t WHERE t.webhook_id = w.id) AS events
  FROM webhooks w
  WHERE w.workspace_id = $1 AND w.removed_at IS NULL AND w.kind = 'operational'`;

/** The workspace's operational webhooks, oldest first. Parameters: workspace. */
export const OPERATIONAL_WEBHOOKS_LIST = prepared('operational_webhooks_list', `${SELECT} ORDER BY w.created_at, w.id`);

/** One of them. Parameters: workspace, id. */
export const OPERATIONAL_WEBHOOK_GET = prepared('operational_webhook_get', `${SELECT} AND w.id = $2`);
