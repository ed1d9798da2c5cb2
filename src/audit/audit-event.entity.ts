import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { WorkspaceEntity } from '../workspaces/workspace.entity.js';

/** What a workspace changed through the API (DESIGN 10), newest kept AUDIT_RETENTION. */
export const AUDIT_ACTIONS = [
  'webhook.created',
  'webhook.removed',
  'webhook.disabled',
  'webhook.enabled',
  'webhook.secret_rotated',
  'webhook.settings_changed',
  'delivery.retried',
  'recovery.started',
  'operational_webhook.created',
  'operational_webhook.removed',
  'portal_link.created',
  'portal_link.revoked',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** Who made a change: an API key (by id, never the key), or a portal session (by its link's id). */
export const AUDIT_ACTOR_TYPES = ['api_key', 'portal_link'] as const;
export type AuditActorType = (typeof AUDIT_ACTOR_TYPES)[number];

@Entity('audit_events')
// The pages read newest first (occurred_at DESC, id DESC), an order entities cannot state: see the migration.
@Index('audit_events_page_idx', { synchronize: false })
@Index('audit_events_action_page_idx', { synchronize: false })
@Index('audit_events_age_idx', ['occurredAt'])
export class AuditEventEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  id: string;

  @ForeignKey(() => WorkspaceEntity, { name: 'audit_events_workspace_id_fkey', onDelete: 'CASCADE' })
  @Column({ name: 'workspace_id', type: 'varchar', length: 32 })
  workspaceId: string;

  @Column({ name: 'occurred_at', type: 'timestamptz', precision: 3 })
  occurredAt: Date;

  @Column({ type: 'varchar', length: 64 })
  action: AuditAction;

  @Column({ name: 'actor_type', type: 'varchar', length: 16 })
  actorType: AuditActorType;

  @Column({ name: 'actor_id', type: 'varchar', length: 32 })
  actorId: string;

  @Column({ name: 'request_id', type: 'varchar', length: 128, nullable: true })
  requestId: string | null;

  @Column({ name: 'target_type', type: 'varchar', length: 32 })
  targetType: string;

  @Column({ name: 'target_id', type: 'varchar', length: 32 })
  targetId: string;

  /** What changed, without secrets. */
  @Column({ type: 'jsonb', default: () => "'{}'" })
  changes: Record<string, unknown>;
}
