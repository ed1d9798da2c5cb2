import { prepared } from './prepared.js';

/*
 * Every SQL statement of the services (migrations, CREATE DATABASE in migrate.ts and the api-key cache's
 * LISTEN aside). The rest of the code reaches the database through TypeORM repositories and the query
 * builder; a statement is here only when the ORM cannot say it (locks, data-modifying CTEs, set-returning
 * functions) or would take more round trips on a hot path. Each says why. Named (prepared) statements
 * run with queryPrepared, on TypeORM's pool.
 */

// --- Submission and its outbox (POST .../submissions, the hottest write) ---

/** The webhooks a submission goes to: read first so their delivery ids can be made before the write. */
export const SUBMISSION_BOUND_WEBHOOKS = prepared(
  'submission_bound_webhooks',
  `SELECT w.id, w.url FROM webhook_calculators wc
   JOIN webhooks w ON w.id = wc.webhook_id AND w.removed_at IS NULL AND w.workspace_id = $2
   JOIN webhook_triggers t ON t.webhook_id = w.id AND t.type = 'newSubmission'
   WHERE wc.calculator_id = $1`,
);

/**
 * SQL because only a data-modifying CTE makes it one statement, so one atomic write in one round trip:
 * bump the calculator's counters, insert the submission, and insert the outbox rows for webhooks still
 * active at commit time. Nothing is written when the calculator is not the workspace's.
 */
export const SUBMISSION_WITH_OUTBOX = prepared(
  'submission_insert_with_outbox',
  `
  WITH calc AS (
    UPDATE calculators SET submissions_count = submissions_count + 1, last_submission_at = $4
    WHERE id = $2 AND workspace_id = $3 AND removed_at IS NULL
    RETURNING id
  ), sub AS (
    INSERT INTO submissions (id, workspace_id, calculator_id, finished, data, meta, created_at, updated_at)
    SELECT $1, $3, calc.id, $5, $6, $7, $4, $4 FROM calc
    RETURNING id
  ), outbox AS (
    INSERT INTO deliveries (id, workspace_id, webhook_id, submission_id, status, max_attempts, next_attempt_at,
                            created_at, updated_at)
    SELECT d.id, $3, d.webhook_id, sub.id, 'pending', $10, $4, $4, $4
    FROM sub CROSS JOIN unnest($8::varchar[], $9::varchar[]) AS d(id, webhook_id)
    JOIN webhooks w ON w.id = d.webhook_id AND w.removed_at IS NULL
    RETURNING id
  )
  SELECT (SELECT count(*) FROM sub)::int AS created, ARRAY(SELECT id FROM outbox) AS delivery_ids`,
);

// --- Delivery attempts (the worker, per attempt) ---

/**
 * SQL because the claim is the database function claim_delivery_attempts (migration 1764100000000):
 * it takes each webhook's lock (WEBHOOK_LOCK_NAMESPACE) at session level, which no ORM call can, and
 * leases a batch of deliveries in one round trip. The locks stay on the connection until ATTEMPT_UNLOCK.
 */
export const ATTEMPT_CLAIM = prepared('delivery_claim', 'SELECT * FROM claim_delivery_attempts($1, $2)');

export const ATTEMPT_UNLOCK = prepared('delivery_unlock', 'SELECT pg_advisory_unlock_all()');

/**
 * SQL because every attempt finished since the last write goes in one statement (group commit, from
 * arrays): an insert per attempt plus an update per delivery through the ORM would be 2n round trips.
 * The update only applies to the attempt the delivery is at, so a stale duplicate cannot overwrite a
 * newer result.
 */
export const ATTEMPT_RECORD = prepared(
  'delivery_record_attempts',
  `
  WITH input AS (
    SELECT * FROM unnest($1::varchar[], $2::varchar[], $3::int[], $4::varchar[], $5::timestamptz[], $6::int[],
                         $7::int[], $8::text[], $9::text[], $10::boolean[], $11::varchar[], $12::timestamptz[],
                         $13::timestamptz[])
      AS i(delivery_id, attempt_id, attempt_number, trigger, started_at, duration_ms, status_code, response_body,
           error, succeeded, status, next_attempt_at, finished_at)
  ), attempt AS (
    INSERT INTO delivery_attempts (id, delivery_id, attempt_number, trigger, started_at, duration_ms, status_code,
                                   response_body, error, succeeded)
    SELECT attempt_id, delivery_id, attempt_number, trigger, started_at, duration_ms, status_code, response_body,
           error, succeeded
    FROM input
  ), updated AS (
    UPDATE deliveries d SET
      status = CASE WHEN d.status = 'cancelled' AND i.status = 'pending' THEN 'cancelled' ELSE i.status END,
      next_attempt_at = CASE WHEN d.status = 'cancelled' THEN NULL ELSE i.next_attempt_at END,
      completed_at = CASE WHEN d.status = 'cancelled' AND i.status = 'pending' THEN d.completed_at
                          WHEN i.status = 'pending' THEN NULL ELSE i.finished_at END,
      attempt_count = i.attempt_number, last_attempt_at = i.started_at, last_status_code = i.status_code,
      last_error = i.error, updated_at = i.finished_at, lease_until = NULL
    FROM input i
    WHERE d.id = i.delivery_id AND d.attempt_count = i.attempt_number - 1
    RETURNING d.id, d.status
  )
  SELECT id, status FROM updated`,
);

// --- Locks (advisory locks have no ORM API) ---

/**
 * Attempts hold this per-webhook lock shared while writing their request; DELETE takes it exclusive.
 * The claim function repeats the namespace 7270.
 */
const WEBHOOK_LOCK_NAMESPACE = 7270;

/** Held until the transaction ends; parameters: the webhook id. */
export const WEBHOOK_REMOVAL_LOCK = `SELECT pg_advisory_xact_lock(${WEBHOOK_LOCK_NAMESPACE}, hashtext($1))`;

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

// --- Metrics ---

/**
 * SQL because the age is measured on the database's clock, in one aggregate that uses
 * deliveries_pending_due_idx (pending deliveries always have a next_attempt_at).
 */
export const OLDEST_PENDING_AGE = `
  SELECT greatest(0, extract(epoch FROM now() - min(next_attempt_at)))::float AS age
  FROM deliveries WHERE status = 'pending'`;
