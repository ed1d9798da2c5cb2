import { Check, Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { SubmissionEntity } from '../submissions/submission.entity.js';
import { WebhookEntity } from '../webhooks/webhook.entity.js';
import { WorkspaceEntity } from '../workspaces/workspace.entity.js';

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'cancelled'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** One submission to one webhook: the outbox row, written in the submission's transaction. */
@Entity('deliveries')
// The log reads it newest first (created_at DESC, id DESC), an order entities cannot state: see the migration.
@Index('deliveries_webhook_log_idx', { synchronize: false })
@Index('deliveries_submission_idx', ['submissionId'])
@Index('deliveries_pending_due_idx', ['nextAttemptAt'], { where: "status = 'pending'" })
@Check('deliveries_status_check', `status IN ('pending', 'succeeded', 'failed', 'cancelled')`)
export class DeliveryEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  id: string;

  @ForeignKey(() => WorkspaceEntity, { name: 'deliveries_workspace_id_fkey', onDelete: 'CASCADE' })
  @Column({ name: 'workspace_id', type: 'varchar', length: 32 })
  workspaceId: string;

  @ForeignKey(() => WebhookEntity, { name: 'deliveries_webhook_id_fkey', onDelete: 'CASCADE' })
  @Column({ name: 'webhook_id', type: 'varchar', length: 32 })
  webhookId: string;

  @ForeignKey(() => SubmissionEntity, { name: 'deliveries_submission_id_fkey', onDelete: 'CASCADE' })
  @Column({ name: 'submission_id', type: 'varchar', length: 32 })
  submissionId: string;

  @Column({ type: 'varchar', length: 16, default: 'pending' })
  status: DeliveryStatus;

  @Column({ name: 'attempt_count', type: 'integer', default: 0 })
  attemptCount: number;

  /** Attempts allowed in all; a manual retry raises it by one. */
  @Column({ name: 'max_attempts', type: 'integer' })
  maxAttempts: number;

  @Column({ name: 'next_attempt_at', type: 'timestamptz', precision: 3, nullable: true })
  nextAttemptAt: Date | null;

  @Column({ name: 'last_attempt_at', type: 'timestamptz', precision: 3, nullable: true })
  lastAttemptAt: Date | null;

  @Column({ name: 'last_status_code', type: 'integer', nullable: true })
  lastStatusCode: number | null;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3, default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3, default: () => 'now()' })
  updatedAt: Date;

  @Column({ name: 'completed_at', type: 'timestamptz', precision: 3, nullable: true })
  completedAt: Date | null;

  /** Set while a worker attempts the delivery (attempt-claims.ts); a dead worker's lease expires. */
  @Column({ name: 'lease_until', type: 'timestamptz', precision: 3, nullable: true, select: false })
  leaseUntil?: Date | null;
}

@Entity('delivery_attempts')
@Index('delivery_attempts_delivery_idx', ['deliveryId', 'attemptNumber'])
export class DeliveryAttemptEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  id: string;

  @ForeignKey(() => DeliveryEntity, { name: 'delivery_attempts_delivery_id_fkey', onDelete: 'CASCADE' })
  @Column({ name: 'delivery_id', type: 'varchar', length: 32 })
  deliveryId: string;

  @Column({ name: 'attempt_number', type: 'integer' })
  attemptNumber: number;

  @Column({ type: 'varchar', length: 16, default: 'scheduled' })
  trigger: 'scheduled' | 'manual';

  @Column({ name: 'started_at', type: 'timestamptz', precision: 3 })
  startedAt: Date;

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
