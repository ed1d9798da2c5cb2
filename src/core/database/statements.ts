import { prepared, type PreparedStatement } from './prepared.js';

/*
 * Every SQL statement of the services (migrations, CREATE DATABASE in migrate.ts and the api-key cache's
 * LISTEN aside). The rest of the code reaches the database through TypeORM repositories and the query
 * builder; a statement is here only when the ORM cannot say it (locks, data-modifying CTEs, set-returning
 * functions) or would take more round trips on a hot path. Each says why. Named (prepared) statements
 * run with queryPrepared, on TypeORM's pool.
 */

// --- Submission and its outbox (POST .../submissions, the hottest write) ---

/**
 * SQL because only a data-modifying CTE makes it one statement, so one atomic write in one round trip:
 * find the webhooks bound to the calculator, bump the calculator's counters, insert the submission, and
 * insert one outbox row per webhook: `pending`, or `skipped` (ended at once, never queued) for a disabled
 * one. The delivery ids come in $8, made by the caller (CUID2s, like every id): when the calculator has
 * more webhooks than ids, nothing is written and `bound` says how many to send again. Nothing is written
 * either when the calculator is not the workspace's. Returns the pending deliveries' ids and urls.
 *
 * `bound` starts from the calculator's bindings and looks each webhook up by its key (OFFSET 0 keeps the
 * planner from reordering that): the generic plan Postgres settles on for a prepared statement otherwise
 * scanned every webhook of the table once removed webhooks' bindings made some calculators' counts large
 * (1.3 ms against 0.05 after the bench's POST+DELETE /webhooks phase, EXPLAIN ANALYZE).
 *
 * Counters: the calculator's row is only share-locked (a removal still waits for the submissions under
 * way), and the count goes to one shard of calculator_submission_counters: the first one no other
 * submission holds (SKIP LOCKED), else a new one (0 for the first, then this connection's among 1..15;
 * ON CONFLICT cannot skip a lock, so it may wait, rarely). Locks are always taken calculator row first
 * (the shard lookup waits for `calc`), then one shard, so submissions and removals cannot deadlock.
 */
export const SUBMISSION_WITH_OUTBOX = prepared(
  'submission_insert_with_outbox_v2',
  `
  WITH bound AS (
    SELECT w.id, w.url, w.disabled_at, row_number() OVER (ORDER BY w.id) AS n
    FROM webhook_calculators wc
    CROSS JOIN LATERAL (
      SELECT w.id, w.url, w.disabled_at FROM webhooks w
      JOIN webhook_triggers t ON t.webhook_id = w.id AND t.type = 'newSubmission'
      WHERE w.id = wc.webhook_id AND w.removed_at IS NULL AND w.workspace_id = $3
      OFFSET 0
    ) w
    WHERE wc.calculator_id = $2
  ), calc AS (
    SELECT id FROM calculators WHERE id = $2 AND workspace_id = $3 AND removed_at IS NULL
      AND (SELECT count(*) FROM bound) <= cardinality($8::varchar[])
    FOR SHARE
  ), free_shard AS (
    SELECT shard FROM calculator_submission_counters WHERE calculator_id = (SELECT id FROM calc)
    ORDER BY shard LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED
  ), bumped AS (
    UPDATE calculator_submission_counters k
    SET count = k.count + 1, last_submission_at = greatest(k.last_submission_at, $4)
    FROM free_shard f WHERE k.calculator_id = $2 AND k.shard = f.shard
  ), added AS (
    INSERT INTO calculator_submission_counters AS k (calculator_id, shard, count, last_submission_at)
    SELECT id, CASE WHEN EXISTS (SELECT FROM calculator_submission_counters e WHERE e.calculator_id = calc.id)
                    THEN 1 + pg_backend_pid() % 15 ELSE 0 END, 1, $4
    FROM calc WHERE NOT EXISTS (SELECT FROM free_shard)
    ON CONFLICT (calculator_id, shard) DO UPDATE
      SET count = k.count + 1, last_submission_at = greatest(k.last_submission_at, EXCLUDED.last_submission_at)
  ), sub AS (
    INSERT INTO submissions (id, workspace_id, calculator_id, finished, data, meta, created_at, updated_at)
    SELECT $1, $3, calc.id, $5, $6, $7, $4, $4 FROM calc
    RETURNING id
  ), outbox AS (
    INSERT INTO deliveries (id, workspace_id, webhook_id, submission_id, calculator_id, status, max_attempts,
                            next_attempt_at, created_at, updated_at, completed_at)
    SELECT d.id, $3, b.id, sub.id, $2, CASE WHEN b.disabled_at IS NULL THEN 'pending' ELSE 'skipped' END,
           $9, CASE WHEN b.disabled_at IS NULL THEN $4::timestamptz END, $4, $4,
           CASE WHEN b.disabled_at IS NOT NULL THEN $4::timestamptz END
    FROM sub CROSS JOIN bound b
    JOIN unnest($8::varchar[]) WITH ORDINALITY AS d(id, n) ON d.n = b.n
    RETURNING id, webhook_id, status
  ), pending AS (
    SELECT o.id, b.url FROM outbox o JOIN bound b ON b.id = o.webhook_id WHERE o.status = 'pending'
  )
  SELECT (SELECT count(*) FROM sub)::int AS created,
         (SELECT count(*) FROM bound)::int AS bound,
         ARRAY(SELECT id FROM pending ORDER BY id) AS delivery_ids,
         ARRAY(SELECT url FROM pending ORDER BY id) AS urls`,
);

// --- Delivery attempts (the worker, per attempt) ---

/**
 * SQL because the claim is the database function claim_delivery_attempts (its current, set-based form
 * in migration 1764400000000, planned once per connection since 1764600000000): it takes each webhook's
 * lock (WEBHOOK_LOCK_NAMESPACE) at session level, which no ORM call can, and leases a batch of
 * deliveries in one round trip. The locks stay on the connection until ATTEMPT_UNLOCK.
 */
export const ATTEMPT_CLAIM = prepared('delivery_claim', 'SELECT * FROM claim_delivery_attempts($1, $2)');

export const ATTEMPT_UNLOCK = prepared('delivery_unlock', 'SELECT pg_advisory_unlock_all()');

/**
 * SQL because every attempt finished since the last write goes in one statement (group commit, from
 * arrays): an insert per attempt plus an update per delivery and per webhook through the ORM would be
 * 3n round trips. The statement is the database function record_delivery_attempts (migration
 * 1764600000000), a function so that Postgres plans it once per connection, not on every call (its SET
 * clauses, like the claim's: a replacement must state them again; attempt-claims e2e checks them).
 * The update only applies to the attempt the delivery is at, so a stale duplicate cannot overwrite a
 * newer result (its attempt is still logged, beside the newer one; the same attempt twice is logged
 * once); a delivery cancelled or skipped meanwhile stays so unless the attempt ended it.
 * Each webhook of the batch is written once (its health, DESIGN 7.1): the recorded attempts are folded
 * in attempt order into its failure streak, and it is disabled on a 410 (`gone`) or when the streak reaches
 * $13 failures while its first failure is older than $14 ms (`failing`; 0 = never). The webhook rows are
 * locked first, in id order (the one-time filter on `updated` runs `locked` before any delivery is
 * touched), as DELETE and disable lock the webhook before its deliveries: no two writers can deadlock.
 * The streak is read from `locked`, which returns each row as it is once locked (the statement's snapshot
 * may predate a batch that committed meanwhile).
 * Rows: `delivery` (id, its status) per recorded attempt, `disabled` (webhook id, reason, workspace) per
 * webhook this batch disabled.
 */
export const ATTEMPT_RECORD = prepared(
  'delivery_record_attempts_v2',
  'SELECT * FROM record_delivery_attempts($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)',
);

// --- One webhook (GET /webhooks/{id} and every operation on one) ---

/**
 * Prepared, so Postgres plans it once per connection: the ORM's findOneBy sent new text each time, which
 * cost GET /webhooks/{id} 2.5x the Postgres CPU and 10-20% of its throughput (alternating bench runs).
 * `columns`: the entity's select list (selectListOf), so the row is the entity's. Parameters: id, workspace.
 */
export const webhookGet = (columns: string): PreparedStatement =>
  prepared('webhook_get', `SELECT ${columns} FROM webhooks WHERE id = $1 AND workspace_id = $2 AND removed_at IS NULL`);

// --- Registration (POST /webhooks) ---

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
     SELECT count(*)::int AS n FROM webhooks WHERE workspace_id = $2 AND removed_at IS NULL
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

// --- Removal and disabling, and the migration lock (advisory locks have no ORM API) ---

/**
 * Attempts hold this per-webhook lock shared while writing their request; DELETE takes it exclusive.
 * The claim function repeats the namespace 7270.
 */
const WEBHOOK_LOCK_NAMESPACE = 7270;

/**
 * The removal fence of DELETE and disable (webhook-lock.ts), SQL because it is one statement, so one
 * round trip and its own transaction (it took eight): the webhook's lock is taken exclusive only when
 * the webhook is the workspace's and `target` (a stranger's id holds nothing); it waits for attempts
 * writing their request and holds off new ones until commit (a claim re-reads the webhook after it).
 * Then the row is locked and changed by `set`, and its pending deliveries end as `ended`: row before
 * deliveries, as ATTEMPT_RECORD takes them, so the two cannot deadlock. A row changed while the lock
 * was awaited is re-read by the row lock and the updates (READ COMMITTED); a delivery inserted
 * meanwhile is ended by its claim. Parameters: webhook id, workspace id, now. Returns the webhook as
 * it was with the ended deliveries' jobs (DeliveryJobs), or no row: no such webhook in `target`.
 */
function webhookStop(
  name: string,
  stop: { target: string; set: string; ended: 'cancelled' | 'skipped'; alsoEnd?: string },
): PreparedStatement {
  const also = stop.alsoEnd ? `, also_ended AS (${stop.alsoEnd})` : '';
  return prepared(
    name,
    `WITH fence AS (
       SELECT pg_advisory_xact_lock(${WEBHOOK_LOCK_NAMESPACE}, hashtext(w.id)) FROM webhooks w
       WHERE w.id = $1 AND w.workspace_id = $2 AND ${stop.target}
     ), hook AS (
       SELECT w.id, w.workspace_id, w.name, w.url, w.source, w.created_at, w.updated_at
       FROM webhooks w, fence WHERE w.id = $1 AND w.workspace_id = $2 AND ${stop.target}
       FOR UPDATE OF w
     ), stopped AS (
       UPDATE webhooks w SET ${stop.set} FROM hook WHERE w.id = hook.id RETURNING w.id
     ), ended AS (
       UPDATE deliveries SET status = '${stop.ended}', next_attempt_at = NULL, completed_at = $3, updated_at = $3
       WHERE webhook_id = (SELECT id FROM stopped) AND status = 'pending'
       RETURNING id, max_attempts
     )${also}
     SELECT hook.*, COALESCE((SELECT json_agg(json_build_object('deliveryId', id, 'maxAttempts', max_attempts))
                              FROM ended), '[]') AS ended
     FROM hook`,
  );
}

/** DELETE /webhooks/{id}: removed, its pending deliveries cancelled, a running recovery (DESIGN 7.3) too. */
export const WEBHOOK_REMOVE = webhookStop('webhook_remove', {
  target: 'w.removed_at IS NULL',
  set: 'removed_at = $3, updated_at = $3',
  ended: 'cancelled',
  alsoEnd: `UPDATE recoveries SET status = 'cancelled', completed_at = $3, updated_at = $3
            WHERE webhook_id = (SELECT id FROM stopped) AND status = 'running'`,
});

/** POST /webhooks/{id}/disable (DESIGN 7.1): disabled by hand, its pending deliveries skipped. */
export const WEBHOOK_DISABLE = webhookStop('webhook_disable', {
  target: 'w.removed_at IS NULL AND w.disabled_at IS NULL',
  set: `disabled_at = $3, disabled_reason = 'manual'`,
  ended: 'skipped',
});

// Any fixed number: every process that migrates takes the same lock, so two replicas never race.
const MIGRATION_LOCK_KEY = 727_001;
export const MIGRATION_LOCK = `SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY})`;
export const MIGRATION_UNLOCK = `SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY})`;

// --- Lists ---

/**
 * SQL because one grouped join returns each webhook with its calculators and triggers in one round
 * trip (the ORM would need three), and a third cheaper in Postgres than a calculators subquery per webhook.
 */
export const WEBHOOKS_LIST = prepared(
  'webhooks_list',
  `SELECT w.id, w.workspace_id, w.name, w.url, w.source, w.created_at, w.updated_at,
     COALESCE(json_agg(json_build_object('id', c.id, 'name', c.name) ORDER BY c.created_at, c.id)
              FILTER (WHERE c.id IS NOT NULL), '[]') AS calculators,
     COALESCE((SELECT json_agg(t.type ORDER BY t.type) FROM webhook_triggers t WHERE t.webhook_id = w.id),
              '[]') AS triggers
   FROM webhooks w
   LEFT JOIN webhook_calculators wc ON wc.webhook_id = w.id
   LEFT JOIN calculators c ON c.id = wc.calculator_id AND c.removed_at IS NULL
   WHERE w.workspace_id = $1 AND w.removed_at IS NULL
   GROUP BY w.id
   ORDER BY w.created_at, w.id`,
);

/**
 * SQL because the page's submission counts are summed from their shards in the same round trip with one
 * index scan for the whole page (ANY of its ids): the ORM's per-row subqueries cost the list ~10x in Postgres.
 * Columns are named as CalculatorEntity's properties. Postgres formats the timestamps (ISO 8601 UTC,
 * milliseconds, as Date.toISOString): parsing them into Dates to format them again cost the api ~30%
 * of its CPU per page (bench: GET /calculators 1.29 api ms/req with Dates, BENCHMARKS.md).
 */
export const CALCULATORS_LIST = prepared(
  'calculators_list',
  `WITH page AS MATERIALIZED (
     SELECT id, workspace_id, folder_id, name, slug, status, elements, layouts, variables, submit_actions, theme_id,
            template_visibility, template_calculator_id, clones_count, impressions_count, last_impression_at,
            new_element_count, created_at, updated_at, removed_at
     FROM calculators WHERE workspace_id = $1 AND removed_at IS NULL
     ORDER BY created_at, id LIMIT $2 OFFSET $3
   )
   SELECT p.id, p.workspace_id AS "workspaceId", p.folder_id AS "folderId", p.name, p.slug, p.status, p.elements,
     p.layouts, p.variables, p.submit_actions AS "submitActions", p.theme_id AS "themeId",
     p.template_visibility AS "templateVisibility", p.template_calculator_id AS "templateCalculatorId",
     p.clones_count AS "clonesCount", p.impressions_count AS "impressionsCount",
     p.new_element_count AS "newElementCount", coalesce(k.count, 0)::int AS "submissionsCount",
     to_char(p.last_impression_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "lastImpressionAt",
     to_char(k.last_submission_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "lastSubmissionAt",
     to_char(p.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "createdAt",
     to_char(p.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "updatedAt"
   FROM page p
   LEFT JOIN (
     SELECT calculator_id, sum(count) AS count, max(last_submission_at) AS last_submission_at
     FROM calculator_submission_counters WHERE calculator_id = ANY (ARRAY(SELECT id FROM page))
     GROUP BY calculator_id
   ) k ON k.calculator_id = p.id
   ORDER BY p.created_at, p.id`,
);

// --- Idempotency keys (every POST that carries one) ---

/**
 * SQL because the claim must be one atomic statement across api replicas: insert the key, or take over
 * a row that has expired, or a claim of the same request whose process died before it answered (no
 * answer after `$7` ms). Returns the claim's created_at (the claim token), or no row when another
 * request holds or answered the key.
 */
export const IDEMPOTENCY_CLAIM = `
  INSERT INTO idempotency_keys AS k (workspace_id, key, method, path, body_hash, expires_at)
  VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6::double precision / 1000))
  ON CONFLICT (workspace_id, key) DO UPDATE
    SET method = EXCLUDED.method, path = EXCLUDED.path, body_hash = EXCLUDED.body_hash, status_code = NULL,
        response_body = NULL, created_at = now(), completed_at = NULL, expires_at = EXCLUDED.expires_at
    WHERE k.expires_at <= now()
       OR (k.status_code IS NULL AND k.created_at <= now() - make_interval(secs => $7::double precision / 1000)
           AND k.method = EXCLUDED.method AND k.path = EXCLUDED.path AND k.body_hash = EXCLUDED.body_hash)
  RETURNING k.created_at`;

/** SQL because DELETE has no LIMIT: one small batch of expired keys (by the expires_at index). */
export const IDEMPOTENCY_PURGE_BATCH = `
  DELETE FROM idempotency_keys WHERE ctid = ANY(ARRAY(
    SELECT ctid FROM idempotency_keys WHERE expires_at <= now() LIMIT $1))`;

// --- Metrics ---

/**
 * SQL because the age is measured on the database's clock, in one aggregate that uses
 * deliveries_pending_due_idx (pending deliveries always have a next_attempt_at).
 */
export const OLDEST_PENDING_AGE = `
  SELECT greatest(0, extract(epoch FROM now() - min(next_attempt_at)))::float AS age
  FROM deliveries WHERE status = 'pending'`;
