import { Check, Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { SubmissionEntity } from '../submissions/submission.entity.js';
import { WebhookEntity } from '../webhooks/webhook.entity.js';

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'cancelled', 'skipped'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/**
 * One submission to one webhook: the outbox row, written in the submission's transaction. Partitioned by
 * created_at (DESIGN 9, store/delivery-partitions.ts), which is therefore part of the key.
 */
@Entity('deliveries')
// The logs read newest first (created_at DESC, id DESC), an order entities cannot state: see the migration.
@Index('deliveries_webhook_log_idx', { synchronize: false })
@Index('deliveries_submission_idx', ['submissionId'])
@Index('deliveries_pending_due_idx', ['nextAttemptAt'], { where: "status = 'pending'" })
// A host's pending deliveries by webhook, then due time: the drain's pick and the host's next wake (DESIGN 5).
@Index('deliveries_host_due_idx', ['host', 'webhookId', 'nextAttemptAt'], { where: "status = 'pending'" })
@Index('deliveries_workspace_log_idx', { synchronize: false })
// GET /deliveries?statusCode=: the log's order within a status class (partial, on an expression: see the migration).
@Index('deliveries_status_code_log_idx', { synchronize: false })
@Index('deliveries_ended_idx', ['completedAt'], { where: 'completed_at IS NOT NULL' })
@Check('deliveries_status_check', `status IN ('pending', 'succeeded', 'failed', 'cancelled', 'skipped')`)
@Check('deliveries_payload_check', 'submission_id IS NOT NULL OR test_submission IS NOT NULL OR event IS NOT NULL')
export class DeliveryEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  id: string;

  /** Its webhook's workspace; no foreign key of its own, as webhookId's implies it. */
  @Column({ name: 'workspace_id', type: 'varchar', length: 32 })
  workspaceId: string;

  @ForeignKey(() => WebhookEntity, { name: 'deliveries_webhook_id_fkey', onDelete: 'CASCADE' })
  @Column({ name: 'webhook_id', type: 'varchar', length: 32 })
  webhookId: string;

  /** Null for a test delivery (DESIGN 7.4), which carries its sample submission in `testSubmission`. */
  @ForeignKey(() => SubmissionEntity, { name: 'deliveries_submission_id_fkey', onDelete: 'CASCADE' })
  @Column({ name: 'submission_id', type: 'varchar', length: 32, nullable: true })
  submissionId: string | null;

  /** A test delivery's sample submission (`meta.test: true`); nothing is stored in submissions for it. */
  @Column({ name: 'test_submission', type: 'jsonb', nullable: true })
  testSubmission: Record<string, unknown> | null;

  /** An operational event (src/operational-webhooks) sent as it is: `{ type, timestamp, data }`. */
  @Column({ type: 'jsonb', nullable: true })
  event: Record<string, unknown> | null;

  /** The submission's calculator, copied so the workspace log filters by it without a join. */
  @Column({ name: 'calculator_id', type: 'varchar', length: 32, nullable: true })
  calculatorId: string | null;

  @Column({ type: 'varchar', length: 16, default: 'pending' })
  status: DeliveryStatus;

  @Column({ name: 'attempt_count', type: 'integer', default: 0 })
  attemptCount: number;

  /** Attempts allowed in all; a manual retry raises it by one. */
  @Column({ name: 'max_attempts', type: 'integer' })
  maxAttempts: number;

  @Column({ name: 'next_attempt_at', type: 'timestamptz', precision: 3, nullable: true })
  nextAttemptAt: Date | null;

  /** Its webhook's host (url_destination of the url), where it waits its turn; set while it may be pending. */
  @Column({ type: 'varchar', length: 300, nullable: true })
  host: string | null;

  /** What made its next attempt due: a retry or a recovery (`manual`), else its schedule. */
  @Column({ name: 'next_trigger', type: 'varchar', length: 16, default: 'scheduled' })
  nextTrigger: 'scheduled' | 'manual';

  /** The W3C trace context of the request that made it (DESIGN 9), so each attempt joins that trace. */
  @Column({ type: 'jsonb', nullable: true, select: false })
  trace?: Record<string, string> | null;

  @Column({ name: 'last_attempt_at', type: 'timestamptz', precision: 3, nullable: true })
  lastAttemptAt: Date | null;

  @Column({ name: 'last_status_code', type: 'integer', nullable: true })
  lastStatusCode: number | null;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError: string | null;

  @PrimaryColumn({ name: 'created_at', type: 'timestamptz', precision: 3, default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3, default: () => 'now()' })
  updatedAt: Date;

  @Column({ name: 'completed_at', type: 'timestamptz', precision: 3, nullable: true })
  completedAt: Date | null;

  /** Set while a worker attempts the delivery (attempt-claims.ts); a dead worker's lease expires. */
  @Column({ name: 'lease_until', type: 'timestamptz', precision: 3, nullable: true, select: false })
  leaseUntil?: Date | null;
}

/**
 * An attempt is named by its delivery, its number and its start: two rows share a number only when a
 * lease ran out while a request was out and another worker took the number over. It carries its
 * delivery's created_at, its partition key, so it lives and goes with its delivery's partition.
 */
@Entity('delivery_attempts')
export class DeliveryAttemptEntity {
  @PrimaryColumn({ name: 'delivery_id', type: 'varchar', length: 32 })
  deliveryId: string;

  @PrimaryColumn({ name: 'delivery_created_at', type: 'timestamptz', precision: 3 })
  deliveryCreatedAt: Date;

  @PrimaryColumn({ name: 'attempt_number', type: 'integer' })
  attemptNumber: number;

  @PrimaryColumn({ name: 'started_at', type: 'timestamptz', precision: 3 })
  startedAt: Date;

  @Column({ type: 'varchar', length: 16, default: 'scheduled' })
  trigger: 'scheduled' | 'manual';

  @Column({ name: 'duration_ms', type: 'integer' })
  durationMs: number;

  @Column({ name: 'status_code', type: 'integer', nullable: true })
  statusCode: number | null;

  @Column({ name: 'response_body', type: 'text', nullable: true })
  responseBody: string | null;

  @Column({ type: 'text', nullable: true })
  error: string | null;

  @Column({ type: 'boolean' })
  succeeded: boolean;
}
