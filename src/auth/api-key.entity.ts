import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity('api_keys')
export class ApiKeyEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  id: string;

  @Column({ name: 'workspace_id', type: 'varchar', length: 32 })
  workspaceId: string;

  /** The readable start of the key (`ack_` + 8 characters), safe to show and log. */
  @Column({ type: 'varchar', length: 32 })
  prefix: string;

  /** SHA-256 of the whole key, hex; the key itself is never stored. */
  @Column({ name: 'key_hash', type: 'char', length: 64 })
  keyHash: string;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'revoked_at', type: 'timestamptz', precision: 3, nullable: true })
  revokedAt: Date | null;

  @Column({ name: 'last_used_at', type: 'timestamptz', precision: 3, nullable: true })
  lastUsedAt: Date | null;
}
