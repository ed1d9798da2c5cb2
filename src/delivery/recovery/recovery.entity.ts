import { Check, Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { WebhookEntity } from '../../webhooks/webhook.entity.js';
import { WorkspaceEntity } from '../../workspaces/workspace.entity.js';

export const RECOVERY_STATUSES = ['running', 'completed', 'cancelled'] as const;
export type RecoveryStatus = (typeof RECOVERY_STATUSES)[number];

/**
 * A recovery (DESIGN 7.3): every failed or skipped delivery of one webhook created in [since, until)
 * sent again once. The worker carries it out in batches in (created_at, id) order and moves the cursor
 * in the same transaction as each batch, so a crash resumes where it stopped and nothing goes twice.
 */
@Entity('recoveries')
@Index('recoveries_running_idx', ['createdAt'], { where: "status = 'running'" })
@Index('recoveries_webhook_idx', ['webhookId'])
@Index('recoveries_ended_idx', ['completedAt'], { where: 'completed_at IS NOT NULL' })
@Check('recoveries_status_check', `status IN ('running', 'completed', 'cancelled')`)
export class RecoveryEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  id: string;

  @ForeignKey(() => WorkspaceEntity, { name: 'recoveries_workspace_id_fkey', onDelete: 'CASCADE' })
  @Column({ name: 'workspace_id', type: 'varchar', length: 32 })
  workspaceId: string;

  @ForeignKey(() => WebhookEntity, { name: 'recoveries_webhook_id_fkey', onDelete: 'CASCADE' })
  @Column({ name: 'webhook_id', type: 'varchar', length: 32 })
  webhookId: string;

  @Column({ type: 'timestamptz', precision: 3 })
  since: Date;

  @Column({ type: 'timestamptz', precision: 3 })
  until: Date;

  @Column({ type: 'varchar', length: 16, default: 'running' })
  status: RecoveryStatus;

  @Column({ type: 'integer', default: 0 })
  matched: number;

  @Column({ type: 'integer', default: 0 })
  requeued: number;

  /** The last delivery handled, in (created_at, id) order; null before the first batch. */
  @Column({ name: 'cursor_created_at', type: 'timestamptz', precision: 3, nullable: true })
  cursorCreatedAt: Date | null;

  @Column({ name: 'cursor_id', type: 'varchar', length: 32, nullable: true })
  cursorId: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3, default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3, default: () => 'now()' })
  updatedAt: Date;

  @Column({ name: 'completed_at', type: 'timestamptz', precision: 3, nullable: true })
  completedAt: Date | null;
}
