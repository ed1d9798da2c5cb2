import { Column, Entity, ForeignKey, Index, PrimaryColumn, Unique } from 'typeorm';
import { WorkspaceEntity } from '../workspaces/workspace.entity.js';

/** A single-use link to the console signed in for one workspace, and the session it opened (DESIGN 10). */
@Entity('portal_links')
// The list reads newest first (created_at DESC, id DESC), an order entities cannot state: see the migration.
@Index('portal_links_page_idx', { synchronize: false })
// The hourly purge reads links by expiry (PortalLinks.purgeOnce).
@Index('portal_links_expires_idx', ['expiresAt'])
@Unique('portal_links_token_hash_key', ['tokenHash'])
@Unique('portal_links_session_hash_key', ['sessionHash'])
export class PortalLinkEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  id: string;

  @ForeignKey(() => WorkspaceEntity, { name: 'portal_links_workspace_id_fkey', onDelete: 'CASCADE' })
  @Column({ name: 'workspace_id', type: 'varchar', length: 32 })
  workspaceId: string;

  /** SHA-256 of the link's token, hex; the token itself is never stored. */
  @Column({ name: 'token_hash', type: 'char', length: 64 })
  tokenHash: string;

  /** SHA-256 of the session credential the link was exchanged for; null until then. */
  @Column({ name: 'session_hash', type: 'char', length: 64, nullable: true })
  sessionHash: string | null;

  @Column({ name: 'read_only', type: 'boolean' })
  readOnly: boolean;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3, default: () => 'now()' })
  createdAt: Date;

  /** The link, and the session it opens, stop working then. */
  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3 })
  expiresAt: Date;

  @Column({ name: 'used_at', type: 'timestamptz', precision: 3, nullable: true })
  usedAt: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', precision: 3, nullable: true })
  revokedAt: Date | null;
}
