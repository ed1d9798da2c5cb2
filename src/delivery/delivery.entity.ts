import { Column, Entity, PrimaryColumn } from 'typeorm';

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'cancelled'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** One submission to one webhook: the outbox row, written in the submission's transaction. */
@Entity('deliveries')
export class DeliveryEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  id: string;

  @Column({ name: 'workspace_id', type: 'varchar', length: 32 })
  workspaceId: string;

  @Column({ name: 'webhook_id', type: 'varchar', length: 32 })
  webhookId: string;

  @Column({ name: 'submission_id', type: 'varchar', length: 32 })
  submissionId: string;

  @Column({ type: 'varchar', length: 16 })
  status: DeliveryStatus;

  @Column({ name: 'attempt_count', type: 'integer' })
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

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;

  @Column({ name: 'completed_at', type: 'timestamptz', precision: 3, nullable: true })
  completedAt: Date | null;

  /** Set while a worker attempts the delivery (attempt-claims.ts); a dead worker's lease expires. */
  @Column({ name: 'lease_until', type: 'timestamptz', precision: 3, nullable: true, select: false })
  leaseUntil?: Date | null;
}

@Entity('delivery_attempts')
export class DeliveryAttemptEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  id: string;

  @Column({ name: 'delivery_id', type: 'varchar', length: 32 })
  deliveryId: string;

  @Column({ name: 'attempt_number', type: 'integer' })
  attemptNumber: number;

  @Column({ type: 'varchar', length: 16 })
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
