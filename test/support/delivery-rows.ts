import { createId } from '@paralleldrive/cuid2';
import type { PoolClient } from 'pg';
import type { DeliveryStatus } from '../../src/delivery/delivery.entity.js';
import { DeliveryPartitions } from '../../src/delivery/store/delivery-partitions.js';
import { waitFor } from './receiver.js';
import type { TestApp } from './test-app.js';

/** Whose rows insertDeliveries writes: a webhook, and a submission of its calculator. */
export interface DeliveryOwner {
  workspaceId: string;
  webhookId: string;
  submissionId: string;
  calculatorId: string;
}

/** The owner of rows for a webhook set up by setupWebhook and one of its submissions. */
export const ownerOf = (
  setup: { workspace: { id: string }; webhook: { id: string }; calculator: { id: string } },
  submission: { id: string },
): DeliveryOwner => ({
  workspaceId: setup.workspace.id,
  webhookId: setup.webhook.id,
  submissionId: submission.id,
  calculatorId: setup.calculator.id,
});

export interface DeliveryRow {
  status: DeliveryStatus;
  createdAt: Date;
  /** Null for a pending row; defaults to createdAt for an ended one. */
  completedAt?: Date | null;
  /** When a pending row is due; a day from now by default. */
  dueAt?: Date;
}

/**
 * The partitions for [from, to). Their DDL gives up after 500 ms behind another statement on the table (a
 * retention pass, say), as the upkeep's does; the upkeep tries again on its next run, and so does this.
 */
const ensurePartitions = (t: TestApp, from: Date, to: Date) =>
  waitFor(
    () =>
      t.app
        .get(DeliveryPartitions)
        .ensure(from, to)
        .then(
          () => true,
          (error: { code?: string }) => {
            if (error.code !== '55P03') throw error; // not lock_not_available
            return false;
          },
        ),
    10_000,
    'the partitions of the rows',
  );

/**
 * Delivery rows written straight to Postgres, for states no API call makes quickly (a skipped delivery,
 * thousands of them, exact createdAt ties); `submissionId` must be a submission of the webhook's calculator.
 * A pending row waits at its webhook's host, with no wake made for it. Partitions are made for createdAt
 * times before the migration's (rows of days ago, say).
 */
export async function insertDeliveries(t: TestApp, owner: DeliveryOwner, rows: DeliveryRow[]): Promise<string[]> {
  const ids = rows.map(() => createId());
  const times = rows.map((r) => r.createdAt.getTime());
  await ensurePartitions(t, new Date(Math.min(...times)), new Date(Math.max(...times) + 1));
  const ended = (r: DeliveryRow) => (r.status === 'pending' ? null : (r.completedAt ?? r.createdAt));
  await t.dataSource.query(
    `INSERT INTO deliveries (id, workspace_id, webhook_id, submission_id, calculator_id, status, max_attempts,
       next_attempt_at, host, created_at, updated_at, completed_at)
     SELECT r.id, $1, $2::varchar, $3, $4, r.status, 8,
       CASE WHEN r.status = 'pending' THEN COALESCE(r.due_at, now() + interval '1 day') END,
       CASE WHEN r.status = 'pending' THEN (SELECT url_destination(w.url) FROM webhooks w WHERE w.id = $2::varchar) END,
       r.created_at, r.created_at, r.completed_at
     FROM unnest($5::varchar[], $6::varchar[], $7::timestamptz[], $8::timestamptz[], $9::timestamptz[])
       AS r(id, status, created_at, completed_at, due_at)`,
    [
      owner.workspaceId,
      owner.webhookId,
      owner.submissionId,
      owner.calculatorId,
      ids,
      rows.map((r) => r.status),
      rows.map((r) => r.createdAt),
      rows.map(ended),
      rows.map((r) => r.dueAt ?? null),
    ],
  );
  return ids;
}

/**
 * What scans returned from the deliveries' partitions in the connection's current transaction: `rows`, their
 * rows and index entries; `indexes`, index entries only; `partial indexes`, those of the partial ones.
 * Postgres reports other transactions' counts only later, so a test reads this before and after within one
 * transaction. A QueryRunner's connection is `await runner.connect()`.
 */
export async function deliveryReads(
  client: PoolClient,
  of: 'rows' | 'indexes' | 'partial indexes' = 'rows',
): Promise<number> {
  const { rows } = await client.query<{ n: number }>(
    `SELECT COALESCE(sum(pg_stat_get_xact_tuples_returned(r.oid)), 0)::int AS n
     FROM pg_inherits p CROSS JOIN LATERAL (
       SELECT p.inhrelid AS oid WHERE $1 = 'rows'
       UNION ALL
       SELECT i.indexrelid FROM pg_index i
       WHERE i.indrelid = p.inhrelid AND ($1 <> 'partial indexes' OR i.indpred IS NOT NULL)
     ) r
     WHERE p.inhparent = 'deliveries'::regclass`,
    [of],
  );
  return rows[0].n;
}
