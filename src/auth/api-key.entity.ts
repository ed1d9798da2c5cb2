import { Column, Entity, ForeignKey, Index, PrimaryColumn, Unique } from 'typeorm';
import { WorkspaceEntity } from '../workspaces/workspace.entity.js';

@Entity('api_keys')
@Index('api_keys_workspace_idx', ['workspaceId', 'createdAt'])
@Unique('api_keys_prefix_key', ['prefix'])
@Unique('api_keys_key_hash_key', ['keyHash'])
export class ApiKeyEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  id: string;

  @ForeignKey(() => WorkspaceEntity, { name: 'api_keys_workspace_id_fkey', onDelete: 'CASCADE' })
  @Column({ name: 'workspace_id', type: 'varchar', length: 32 })
  workspaceId: string;

  /** The readable start of the key (`ack_` + 8 characters), safe to show and log. */
  @Column({ type: 'varchar', length: 32 })
  prefix: string;

  /** SHA-256 of the whole key, hex; the key itself is never stored. */
  @Column({ name: 'key_hash', type: 'char', length: 64 })
  keyHash: string;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3, default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'revoked_at', type: 'timestamptz', precision: 3, nullable: true })
  revokedAt: Date | null;

  @Column({ name: 'last_used_at', type: 'timestamptz', precision: 3, nullable: true })
  lastUsedAt: Date | null;
}
