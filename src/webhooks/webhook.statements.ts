import { prepared, type PreparedStatement } from '../core/database/prepared.js';

/*
 * The webhooks' SQL where the ORM would take more round trips on a hot path, or cannot say it; each says
 * why. The statements that also change deliveries (DELETE, disable) belong to the delivery store.
 */

/**
 * Prepared, so Postgres plans it once per connection (the ORM's findOneBy sends new text each time, and
 * this is on every operation on one webhook). Operational webhooks (DESIGN 10) are not the spec's: 404. `columns`: the entity's select list (selectListOf), so the
 * row is the entity's. Parameters: id, workspace.
 */
export const webhookGet = (columns: string): PreparedStatement =>
  prepared(
    'webhook_get',
    `SELECT ${columns} FROM webhooks WHERE id = $1 AND workspace_id = $2 AND removed_at IS NULL AND kind = 'webhook'`,
  );

/** Serialises a workspace's registrations, so the cap on active webhooks holds under concurrent requests. */
export const WORKSPACE_REGISTRATION_LOCK = prepared(
  'workspace_registration_lock',
  'SELECT 1 FROM workspaces WHERE id = $1 FOR UPDATE',
);

/**
 * SQL because one data-modifying CTE checks and writes in one round trip (the ORM took five): runs after
 * WORKSPACE_REGISTRATION_LOCK in its transaction, so its count sees every registration before it. Inserts
 * the webhook with its calculators and triggers only when every calculator is the workspace's and the
 * workspace is under the cap; returns the active count and the known calculators either way, so the
 * caller names what refused it. Parameters: id, workspace id, name, url, source, secret, calculator ids,
 * trigger types, now, cap.
 */
export const WEBHOOK_REGISTER = prepared(
  'webhook_register',
  `WITH active AS (
     SELECT count(*)::int AS n FROM webhooks WHERE workspace_id = $2 AND removed_at IS NULL AND kind = 'webhook'
   ), known AS (
     SELECT id FROM calculators WHERE workspace_id = $2 AND id = ANY($7::varchar[]) AND removed_at IS NULL
   ), hook AS (
     INSERT INTO webhooks (id, workspace_id, name, url, source, secret, created_at, updated_at)
     SELECT $1, $2, $3, $4, $5, $6, $9, $9
     WHERE (SELECT n FROM active) < $10 AND (SELECT count(*) FROM known) = cardinality($7::varchar[])
     RETURNING id
   ), bound AS (
     INSERT INTO webhook_calculators (webhook_id, calculator_id) SELECT hook.id, known.id FROM hook, known
   ), triggered AS (
     INSERT INTO webhook_triggers (webhook_id, type) SELECT hook.id, t FROM hook, unnest($8::varchar[]) t
   )
   SELECT (SELECT n FROM active) AS active, ARRAY(SELECT id FROM known) AS known`,
);

/**
 * SQL because one grouped join returns each webhook with its calculators and triggers in one round
 * trip (the ORM would need three), and a third cheaper in Postgres than a calculators subquery per webhook.
 * Postgres formats the timestamps (ISO 8601 UTC, milliseconds, as Date.toISOString), as parsing them into
 * Dates to format them again costs the api more than the rest of the row.
 */
export const WEBHOOKS_LIST = prepared(
  'webhooks_list',
  `SELECT w.id, w.workspace_id, w.name, w.url, w.source,
     to_char(w.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
     to_char(w.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at,
     COALESCE(json_agg(json_build_object('id', c.id, 'name', c.name) ORDER BY c.created_at, c.id)
              FILTER (WHERE c.id IS NOT NULL), '[]') AS calculators,
     COALESCE((SELECT json_agg(t.type ORDER BY t.type) FROM webhook_triggers t WHERE t.webhook_id = w.id),
              '[]') AS triggers
   FROM webhooks w
   LEFT JOIN webhook_calculators wc ON wc.webhook_id = w.id
   LEFT JOIN calculators c ON c.id = wc.calculator_id AND c.removed_at IS NULL
   WHERE w.workspace_id = $1 AND w.removed_at IS NULL AND w.kind = 'webhook'
   GROUP BY w.id
   ORDER BY w.created_at, w.id`,
);

/** A filter's counts (DESIGN 11): its version's shards summed. Parameters: webhook id, filter version. */
export const FILTER_TOTALS = prepared(
  'webhook_filter_totals',
  `SELECT coalesce(sum(passed), 0)::text AS passed, coalesce(sum(held_back), 0)::text AS held_back
   FROM webhook_filter_counters WHERE webhook_id = $1 AND filter_version = $2`,
);
