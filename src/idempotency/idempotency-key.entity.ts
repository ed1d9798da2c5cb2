import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { WorkspaceEntity } from '../workspaces/workspace.entity.js';

/**
 * The first answer to a POST or PATCH carrying `Idempotency-Key` (DESIGN 7.6), per workspace and key, kept 24 h.
 * `statusCode` is null while the first request is still running.
 */
@Entity('idempotency_keys')
@Index('idempotency_keys_expires_idx', ['expiresAt'])
export class IdempotencyKeyEntity {
  @ForeignKey(() => WorkspaceEntity, { name: 'idempotency_keys_workspace_id_fkey', onDelete: 'CASCADE' })
  @PrimaryColumn({
    name: 'workspace_id',
    type: 'varchar',
    length: 32,
    primaryKeyConstraintName: 'idempotency_keys_pkey',
  })
  workspaceId: string;

  @PrimaryColumn({ type: 'varchar', length: 255, primaryKeyConstraintName: 'idempotency_keys_pkey' })
  key: string;

  @Column({ type: 'varchar', length: 8 })
  method: string;

  @Column({ type: 'varchar', length: 2048 })
  path: string;

  /** SHA-256 of the request body, hex. */
  @Column({ name: 'body_hash', type: 'varchar', length: 64 })
  bodyHash: string;

  @Column({ name: 'status_code', type: 'integer', nullable: true })
  statusCode: number | null;

  @Column({ name: 'response_body', type: 'text', nullable: true })
  responseBody: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3, default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'completed_at', type: 'timestamptz', precision: 3, nullable: true })
  completedAt: Date | null;

  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3 })
  expiresAt: Date;
}
