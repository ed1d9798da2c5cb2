import { Inject, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, MoreThan, Repository } from 'typeorm';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { deleteOlderThan } from '../core/database/delete-in-batches.js';
import { ApiError } from '../core/http/api-error.js';
import { newestFirstPage, type LogPosition } from '../core/http/log-cursor.js';
import { newId } from '../core/ids.js';
import { ScheduledJob } from '../scheduling/scheduled-job.js';
import { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { PortalLinkEntity } from './portal-link.entity.js';
import { hashToken, newLinkToken, newSessionToken } from './portal-token.js';

/** A portal session as the auth guard sees it: whose workspace, which link opened it, what it may do. */
export interface PortalSession {
  workspace: WorkspaceEntity;
  linkId: string;
  readOnly: boolean;
}

// Links age by days: an hourly pass keeps the table within an hour of its retention.
const RETENTION_EVERY_MS = 3_600_000;

/**
 * The one owner of `portal_links`: issues, lists and revokes links, exchanges one for a session, checks a
 * session, and lets expired links go once AUDIT_RETENTION has passed (the audit events naming them as actor).
 */
@Injectable()
export class PortalLinks {
  constructor(
    @InjectRepository(PortalLinkEntity) private readonly links: Repository<PortalLinkEntity>,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** A new link; its token is returned this once and only its hash is stored. */
  async issue(
    workspaceId: string,
    { expiresInMs = this.config.portalLinkTtlMs, readOnly = false }: { expiresInMs?: number; readOnly?: boolean },
  ): Promise<{ link: PortalLinkEntity; token: string }> {
    const { token, hash } = newLinkToken();
    const now = Date.now();
    const link = this.links.create({
      id: newId(),
      workspaceId,
      tokenHash: hash,
      sessionHash: null,
      readOnly,
      createdAt: new Date(now),
      expiresAt: new Date(now + expiresInMs),
      usedAt: null,
      revokedAt: null,
    });
    await this.links.insert(link);
    return { link, token };
  }

  /** A page, newest first by (created_at, id), expired, used and revoked links included. */
  async list(
    workspaceId: string,
    { after, limit }: { after?: LogPosition; limit: number },
  ): Promise<{ links: PortalLinkEntity[]; nextCursor: string | null }> {
    const query = this.links.createQueryBuilder('l').where('l.workspace_id = :workspaceId', { workspaceId });
    const page = { workspaceId, time: 'created_at', after, limit, positionOf: (l: PortalLinkEntity) => l };
    const { rows, nextCursor } = await newestFirstPage(query, page);
    return { links: rows, nextCursor };
  }

  /** Revokes the link and so its session, at once: every request reads the link (no cache). 404 when unknown. */
  async revoke(workspaceId: string, id: string): Promise<{ link: PortalLinkEntity; changed: boolean }> {
    const link = await this.links.findOneBy({ id, workspaceId });
    if (!link) throw ApiError.notFound('Portal link not found');
    if (link.revokedAt) return { link, changed: false };
    const { affected } = await this.links.update({ id, revokedAt: IsNull() }, { revokedAt: new Date() });
    return { link: await this.links.findOneByOrFail({ id }), changed: affected === 1 };
  }

  /**
   * The session a link's token opens, or null when the token is unknown, used, expired or revoked. One
   * conditional UPDATE: of two racing exchanges the second waits for the first's row lock, then finds the
   * link used, so a link opens one session at most.
   */
  async exchange(token: string): Promise<{ session: string; link: PortalLinkEntity } | null> {
    const session = newSessionToken();
    const now = new Date();
    const { raw } = (await this.links
      .createQueryBuilder()
      .update()
      .set({ usedAt: now, sessionHash: session.hash })
      .where('token_hash = :hash', { hash: hashToken(token) })
      .andWhere('used_at IS NULL AND revoked_at IS NULL AND expires_at > :now', { now })
      .returning('id')
      .execute()) as { raw: { id: string }[] };
    if (raw.length === 0) return null;
    return { session: session.token, link: await this.links.findOneByOrFail({ id: raw[0].id }) };
  }

  /** The live session with this credential hash, or null: unknown, expired, or its link revoked. */
  async authenticate(sessionHash: string): Promise<PortalSession | null> {
    const link = await this.links.findOne({
      select: { id: true, workspaceId: true, readOnly: true },
      where: { sessionHash, revokedAt: IsNull(), expiresAt: MoreThan(new Date()) },
    });
    const workspace = link && (await this.links.manager.findOneBy(WorkspaceEntity, { id: link.workspaceId }));
    return link && workspace ? { workspace, linkId: link.id, readOnly: link.readOnly } : null;
  }

  /** Deletes links expired for longer than AUDIT_RETENTION, in small batches; returns how many. */
  @ScheduledJob({ name: 'delete-portal-links-past-retention', every: () => RETENTION_EVERY_MS })
  async purgeOnce(signal?: AbortSignal): Promise<number> {
    const before = new Date(Date.now() - this.config.auditRetentionMs);
    return deleteOlderThan(this.links, { table: 'portal_links', column: 'expires_at', before }, signal);
  }
}
