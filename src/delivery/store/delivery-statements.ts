import { DatabaseLock } from '../../core/database/database-lock.js';
import { plannedEachRun, prepared, type PreparedStatement } from '../../core/database/prepared.js';
import { filterMatches, submissionDocument } from '../../submissions/submission-filter.js';
import { TRANSITIONS } from './delivery-lifecycle.js';

/*
 * Every statement that writes `deliveries` or `delivery_attempts` (and the store's reads on the engine's
 * hot path), one per transition of delivery-lifecycle.ts. SQL where the ORM cannot say it (advisory
 * locks, data-modifying CTEs, arrays) or would take more round trips; each says why. Named statements are
 * parsed and planned once per connection. The plpgsql functions they call are in sql/.
 */

const list = (statuses: readonly string[]) => statuses.map((s) => `'${s}'`).join(', ');

// --- create: a submission and its outbox (POST .../submissions, the hottest write) ---

/**
 * The Submission its webhooks' filters see, from the statement's parameters as the payload will show them;
 * a scalar sub-select, so Postgres builds it once per statement, and only when a webhook has a filter.
 */
const SUBMISSION_DOCUMENT = `(SELECT ${submissionDocument({
  id: '$1::varchar',
  createdAt: '$4::timestamptz',
  updatedAt: '$4::timestamptz',
  calculatorId: '$2::varchar',
  finished: '$5::boolean',
  data: '$6::jsonb',
  meta: '$7::jsonb',
})})`;

/**
 * SQL because only a data-modifying CTE makes it one statement, so one atomic write in one round trip:
 * find the webhooks bound to the calculator, bump the calculator's counters, insert the submission, and
 * insert one outbox row per webhook: `pending`, or `skipped` (ended at once, never queued) for a disabled
 * one. The delivery ids come in $8, made by the caller (CUID2s, like every id): when the calculator has
 * more webhooks than ids, nothing is written and `bound` says how many to send again. Nothing is written
 * either when the calculator is not the workspace's. Each delivery's attempts follow its webhook's retry
 * schedule ($9 standard, $10 short, 1 for none). A pending one names its host (url_destination), where it
 * waits its turn, and keeps the request's trace context ($11). Returns the pending deliveries' ids and
 * their hosts, to wake.
 *
 * `bound` starts from the calculator's bindings and looks each webhook up by its key (OFFSET 0 keeps the
 * planner from reordering that): otherwise the generic plan of the prepared statement can scan every
 * webhook once removed webhooks' bindings make some calculators' counts large.
 *
 * Counters: the calculator's row is only share-locked (a removal still waits for the submissions under
 * way), and the count goes to one shard of calculator_submission_counters: the first one no other
 * submission holds (SKIP LOCKED), else a new one (0 for the first, then this connection's among 1..15;
 * ON CONFLICT cannot skip a lock, so it may wait, rarely). Locks are always taken calculator row first
 * (the shard lookup waits for `calc`), then one shard, so submissions and removals cannot deadlock.
 *
 * Filters (DESIGN 11): a webhook with a filter gets a delivery only when the submission `passes` it
 * (jsonb_path_match, silent: an error is no match); ids are still made for every bound webhook, so a
 * held-back submission never costs a second round trip. Its counts go to webhook_filter_counters rows
 * keyed by the calculator shard this submission holds (from `bumped` or `added`), so no two submissions
 * under way write the same row, and by the filter's version, so a new filter's counts start from zero.
 */
export const SUBMISSION_WITH_OUTBOX = prepared(
  'submission_insert_with_outbox',
  `
  WITH bound AS (
    SELECT w.id, w.url, w.disabled_at, w.retry_schedule, row_number() OVER (ORDER BY w.id) AS n,
           w.filter_version, w.filter IS NOT NULL AS filtered,
           ${filterMatches(SUBMISSION_DOCUMENT, 'w.filter::jsonpath')} AS passes
    FROM webhook_calculators wc
    CROSS JOIN LATERAL (
      SELECT w.id, w.url, w.disabled_at, w.retry_schedule, w.filter, w.filter_version FROM webhooks w
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
    RETURNING k.shard
  ), added AS (
    INSERT INTO calculator_submission_counters AS k (calculator_id, shard, count, last_submission_at)
    SELECT id, CASE WHEN EXISTS (SELECT FROM calculator_submission_counters e WHERE e.calculator_id = calc.id)
                    THEN 1 + pg_backend_pid() % 15 ELSE 0 END, 1, $4
    FROM calc WHERE NOT EXISTS (SELECT FROM free_shard)
    ON CONFLICT (calculator_id, shard) DO UPDATE
      SET count = k.count + 1, last_submission_at = greatest(k.last_submission_at, EXCLUDED.last_submission_at)
    RETURNING k.shard
  ), filter_counts AS (
    INSERT INTO webhook_filter_counters AS c (webhook_id, filter_version, calculator_id, shard, passed, held_back)
    SELECT b.id, b.filter_version, $2, s.shard, b.passes::int, (NOT b.passes)::int
    FROM bound b CROSS JOIN (SELECT shard FROM bumped UNION ALL SELECT shard FROM added) s
    WHERE b.filtered
    ON CONFLICT (webhook_id, filter_version, calculator_id, shard) DO UPDATE
      SET passed = c.passed + EXCLUDED.passed, held_back = c.held_back + EXCLUDED.held_back
  ), sub AS (
    INSERT INTO submissions (id, workspace_id, calculator_id, finished, data, meta, created_at, updated_at)
    SELECT $1, $3, calc.id, $5, $6, $7, $4, $4 FROM calc
    RETURNING id
  ), outbox AS (
    INSERT INTO deliveries (id, workspace_id, webhook_id, submission_id, calculator_id, status, max_attempts,
                            next_attempt_at, host, trace, created_at, updated_at, completed_at)
    SELECT d.id, $3, b.id, sub.id, $2, CASE WHEN b.disabled_at IS NULL THEN 'pending' ELSE 'skipped' END,
           CASE b.retry_schedule WHEN 'none' THEN 1 WHEN 'short' THEN $10 ELSE $9 END,
           CASE WHEN b.disabled_at IS NULL THEN $4::timestamptz END,
           CASE WHEN b.disabled_at IS NULL THEN url_destination(b.url) END, $11::jsonb, $4, $4,
           CASE WHEN b.disabled_at IS NOT NULL THEN $4::timestamptz END
    FROM sub CROSS JOIN bound b
    JOIN unnest($8::varchar[]) WITH ORDINALITY AS d(id, n) ON d.n = b.n
    WHERE b.passes
    RETURNING id, host, status
  )
  SELECT (SELECT count(*) FROM sub)::int AS created,
         (SELECT count(*) FROM bound)::int AS bound,
         ARRAY(SELECT id FROM outbox WHERE status = 'pending' ORDER BY id) AS delivery_ids,
         ARRAY(SELECT DISTINCT host FROM outbox WHERE status = 'pending') AS hosts`,
);

// --- create: operational events (DESIGN 10), in the transaction of the change they report when it has one ---

/*
 * Plain text, run on the caller's transaction: events are few. The receivers of each event (by its
 * ordinal): the workspace's operational webhooks whose triggers hold its type. Parameters: workspace
 * ids, event types.
 */
export const OPERATIONAL_EVENT_RECEIVERS = `
  SELECT e.n::int AS n, w.id, w.url, w.workspace_id AS "workspaceId"
  FROM unnest($1::varchar[], $2::varchar[]) WITH ORDINALITY AS e(workspace_id, type, n)
  JOIN webhooks w ON w.workspace_id = e.workspace_id AND w.kind = 'operational' AND w.removed_at IS NULL
  JOIN webhook_triggers t ON t.webhook_id = w.id AND t.type = e.type
  ORDER BY e.n, w.id`;

/**
 * One pending delivery per receiver, carrying its event, at its receiver's host. Parameters: ids, workspaces,
 * webhooks, events, max_attempts, now. Returns the hosts to wake.
 */
export const OPERATIONAL_EVENTS_INSERT = `
  INSERT INTO deliveries (id, workspace_id, webhook_id, event, status, max_attempts, next_attempt_at, host,
                          created_at, updated_at)
  SELECT i.id, i.workspace_id, i.webhook_id, i.event, 'pending', $5, $6,
         (SELECT url_destination(w.url) FROM webhooks w WHERE w.id = i.webhook_id), $6, $6
  FROM unnest($1::varchar[], $2::varchar[], $3::varchar[], $4::jsonb[]) AS i(id, workspace_id, webhook_id, event)
  RETURNING host`;

/**
 * Deliveries of webhooks (not of operational ones, so their events cannot loop) that ended failed, with
 * what delivery.failed tells: the webhook, the last attempt and what was sent. Parameters: ids, and the least
 * and greatest of their created_at, which keep the lookup to their partitions.
 */
export const FAILED_DELIVERIES = `
  SELECT d.id, d.workspace_id AS "workspaceId", w.id AS "webhookId", w.name AS "webhookName", w.url AS "webhookUrl",
         d.test_submission AS "testSubmission", s.id AS "submissionId", s.calculator_id AS "calculatorId",
         s.finished, s.data, s.meta, s.created_at AS "createdAt", s.updated_at AS "updatedAt",
         a.attempt_number AS "attemptNumber", a.started_at AS "startedAt", a.duration_ms AS "durationMs",
         a.status_code AS "statusCode", a.response_body AS "responseBody", a.error
  FROM deliveries d
  JOIN webhooks w ON w.id = d.webhook_id AND w.kind = 'webhook'
  LEFT JOIN submissions s ON s.id = d.submission_id
  LEFT JOIN LATERAL (
    SELECT * FROM delivery_attempts a WHERE a.delivery_id = d.id AND a.delivery_created_at = d.created_at ORDER BY a.attempt_number DESC, a.started_at DESC
    LIMIT 1
  ) a ON true
  WHERE d.id = ANY($1::varchar[]) AND d.created_at BETWEEN $2 AND $3 AND d.status = 'failed' AND d.event IS NULL`;

// --- claim and record (the worker, per batch of attempts) ---

/**
 * A drain's pick is the function pick_host_deliveries (sql/), planned once per connection like the claim:
 * a host's due deliveries, in turn by workspace then webhook, within each webhook's cap. Parameters: host,
 * how many, the webhooks the drain has attempts in flight to and how many, the default cap, the workspaces
 * at their share of the worker, the drain's lane and the host's lanes, and per webhook the due time of the
 * last delivery the drain picked.
 */
export const HOST_PICK = prepared(
  'delivery_pick',
  'SELECT * FROM pick_host_deliveries($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
);

/** When the host's next delivery falls due (null: none pending): the wake a drain leaves (host_next_due, sql/). */
export const HOST_NEXT_DUE = prepared('delivery_host_next_due', 'SELECT host_next_due($1) AS at');

/**
 * The claim is the function claim_delivery_attempts (sql/): it takes each webhook's fence lock at session
 * level, which no ORM call can, and leases a batch of due deliveries in one round trip. The locks stay on
 * the connection until ATTEMPT_UNLOCK.
 */
export const ATTEMPT_CLAIM = prepared('delivery_claim', 'SELECT * FROM claim_delivery_attempts($1, $2, $3)');

/**
 * The created_at of deliveries whose job does not carry it (jobs queued before the tables were
 * partitioned): a look in every partition, once per such job.
 */
export const CREATED_AT_OF = prepared(
  'delivery_created_at_of',
  `SELECT id, created_at FROM deliveries WHERE id = ANY($1::varchar[])`,
);

export const ATTEMPT_UNLOCK = prepared('delivery_unlock', 'SELECT pg_advisory_unlock_all()');

/**
 * SQL because every attempt finished since the last write goes in one statement (group commit, from
 * arrays): an insert per attempt plus an update per delivery and per webhook through the ORM would be
 * 3n round trips. The statement is the function record_delivery_attempts (sql/), a function so that
 * Postgres plans it once per connection, not on every call (its SET clauses, like the claim's).
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
 * $15 holds each delivery's created_at, which names its partition; an attempt of a delivery that is gone
 * (its partition dropped) is not logged.
 * Rows: `delivery` (id, its status) per recorded attempt, `disabled` (webhook id, reason, workspace) per
 * webhook this batch disabled.
 */
export const ATTEMPT_RECORD = prepared(
  'delivery_record_attempts',
  'SELECT * FROM record_delivery_attempts($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)',
);

/**
 * A delivery found by its key tests its status through COALESCE: a plain status = 'pending' lets the
 * planner read it through a partial index on pending deliveries, which without statistics (a new
 * partition) looks tiny and is then scanned whole, every pending delivery, for one row.
 */
const statusByKey = (statuses: readonly string[]) => `COALESCE(status, '') IN (${list(statuses)})`;

/**
 * A claimed delivery whose request never went out (its kept-alive connection had closed): no attempt made.
 * Rare, so planned on each run.
 */
export const RELEASE_LEASE = plannedEachRun(
  `UPDATE deliveries SET lease_until = NULL
   WHERE id = $1 AND created_at = $2 AND ${statusByKey(TRANSITIONS.release.from)}`,
);

// --- cancel and skip: DELETE and disable of a webhook ---

/**
 * The removal fence of DELETE and disable, SQL because it is one statement, so one round trip and its
 * own transaction: the webhook's lock is taken exclusive only when
 * the webhook is the workspace's and `target` (a stranger's id holds nothing); it waits for attempts
 * writing their request and holds off new ones until commit (a claim re-reads the webhook after it).
 * Then the row is locked and changed by `set`, and its pending deliveries end as `ended`
 * (end_pending_deliveries, sql/): row before deliveries, as ATTEMPT_RECORD takes them, so the two cannot
 * deadlock. A row changed while the lock was awaited is re-read by the row lock and the updates (READ
 * COMMITTED); a delivery inserted meanwhile is ended by its claim. Parameters: webhook id, workspace id,
 * now. Returns the webhook as it was with how many deliveries it ended, or no row: no such webhook in
 * `target`. Nothing in Redis names a delivery, so there is nothing else to remove: the host's next drain
 * finds none of them due.
 */
function webhookStop(
  name: string,
  stop: { target: string; set: string; ended: (typeof TRANSITIONS)['cancel' | 'skip']['to'][0]; alsoEnd?: string },
): PreparedStatement {
  const also = stop.alsoEnd ? `, also_ended AS (${stop.alsoEnd})` : '';
  return prepared(
    name,
    `WITH fence AS (
       SELECT pg_advisory_xact_lock(${DatabaseLock.WebhookFence}, hashtext(w.id)) FROM webhooks w
       WHERE w.id = $1 AND w.workspace_id = $2 AND ${stop.target}
     ), hook AS (
       SELECT w.id, w.workspace_id, w.name, w.url, w.source, w.created_at, w.updated_at
       FROM webhooks w, fence WHERE w.id = $1 AND w.workspace_id = $2 AND ${stop.target}
       FOR UPDATE OF w
     ), stopped AS (
       UPDATE webhooks w SET ${stop.set} FROM hook WHERE w.id = hook.id RETURNING w.id
     ), ended AS (
       SELECT end_pending_deliveries(s.id, '${stop.ended}', $3) AS n FROM stopped s
     )${also}
     SELECT hook.*, COALESCE((SELECT n FROM ended), 0) AS ended
     FROM hook`,
  );
}

/** DELETE /webhooks/{id}: removed, its pending deliveries cancelled, a running recovery (DESIGN 7.3) too. */
export const WEBHOOK_REMOVE = webhookStop('webhook_remove', {
  target: "w.removed_at IS NULL AND w.kind = 'webhook'",
  set: 'removed_at = $3, updated_at = $3',
  ended: 'cancelled',
  alsoEnd: `UPDATE recoveries SET status = 'cancelled', completed_at = $3, updated_at = $3
            WHERE webhook_id = (SELECT id FROM stopped) AND status = 'running'`,
});

/** POST /webhooks/{id}/disable (DESIGN 7.1): disabled by hand, its pending deliveries skipped. */
export const WEBHOOK_DISABLE = webhookStop('webhook_disable', {
  target: "w.removed_at IS NULL AND w.disabled_at IS NULL AND w.kind = 'webhook'",
  set: `disabled_at = $3, disabled_reason = 'manual'`,
  ended: 'skipped',
});

/** DELETE /operational-webhooks/{id} (DESIGN 10): as a webhook's DELETE; it has no recoveries. */
export const OPERATIONAL_WEBHOOK_REMOVE = webhookStop('operational_webhook_remove', {
  target: "w.removed_at IS NULL AND w.kind = 'operational'",
  set: 'removed_at = $3, updated_at = $3',
  ended: 'cancelled',
});

/** Skips the pending deliveries of a webhook the record just disabled (the claim would skip them later anyway). */
export const SKIP_PENDING = prepared(
  'deliveries_skip_pending',
  `SELECT end_pending_deliveries($1, '${TRANSITIONS.skip.to[0]}', $2)`,
);

// --- retry and recover: back to pending ---

/**
 * A pending delivery's next attempt moves to now (no attempt added). Parameters: id, now, its created_at.
 * Returns max_attempts and its host, or no row when the delivery is no longer pending. Made by hand, so
 * planned on each run.
 */
export const RETRY_PENDING_NOW = plannedEachRun(
  `UPDATE deliveries SET next_attempt_at = $2, next_trigger = 'manual', updated_at = $2
   WHERE id = $1 AND created_at = $3 AND ${statusByKey(['pending'])}
   RETURNING max_attempts, host`,
);

/**
 * An ended delivery gets one more attempt, now, with the same id (so the same webhook-id). Parameters:
 * ids, now, the statuses it may come from, the first and last created_at of the ids (their partitions).
 * Returns each one's id, new max_attempts and host (its webhook's, to wake). Pending again, it keeps its
 * partition from retention (7.7).
 */
const BACK_TO_PENDING = `
  UPDATE deliveries d SET status = 'pending', max_attempts = d.attempt_count + 1, next_attempt_at = $2,
                          next_trigger = 'manual', lease_until = NULL, completed_at = NULL, updated_at = $2,
                          host = (SELECT url_destination(w.url) FROM webhooks w WHERE w.id = d.webhook_id)
  WHERE d.id = ANY($1::varchar[]) AND d.created_at BETWEEN $4 AND $5 AND d.status = ANY($3::varchar[])
  RETURNING d.id, d.max_attempts, d.host`;
export const RETRY_ENDED = prepared('delivery_retry_ended', BACK_TO_PENDING);
/** Recovery runs inside its batch's transaction (recovery.runner.ts), so this one is plain text. */
export const RECOVER = BACK_TO_PENDING;

// --- reads of the engine: the sweeper, the drain's wake and the backlog metric ---

/** Taken once per sweep, so rows falling due meanwhile wait for the next one and a sweep always ends. */
export const DUE_BEFORE = prepared(
  'deliveries_due_before',
  `SELECT now() - make_interval(secs => $1::float / 1000) AS "dueBefore"`,
);

/**
 * The hosts with pending deliveries after $1, $2 at most, each with its next due time: the function
 * overdue_hosts (sql/), planned once per connection like the claim.
 */
export const OVERDUE_HOSTS = prepared('deliveries_overdue_hosts', 'SELECT * FROM overdue_hosts($1, $2)');

/**
 * SQL because the age is measured on the database's clock; the first pending due time is the function
 * oldest_pending_due (sql/): the first entry of deliveries_pending_due_idx, however long the backlog.
 */
export const OLDEST_PENDING_AGE = prepared(
  'deliveries_oldest_pending_age',
  `SELECT greatest(0, extract(epoch FROM now() - oldest_pending_due()))::float AS age`,
);
