import { Inject, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { createId } from '@paralleldrive/cuid2';
import { Repository } from 'typeorm';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { deleteOlderThan } from '../core/database/delete-in-batches.js';
import { newestFirstPage, type LogPosition } from '../core/http/log-cursor.js';
import { ScheduledJob } from '../scheduling/scheduled-job.js';
import { AuditEventEntity, type AuditAction } from './audit-event.entity.js';

export type NewAuditEvent = Omit<AuditEventEntity, 'id' | 'occurredAt'>;

export interface AuditFilters {
  action?: AuditAction;
  since?: Date;
  until?: Date;
  after?: LogPosition;
  limit: number;
}

// Events age by days: an hourly pass keeps the table within an hour of AUDIT_RETENTION.
const RETENTION_EVERY_MS = 3_600_000;

/** The one owner of `audit_events`: appends, reads a workspace's page, and lets go what AUDIT_RETENTION does. */
@Injectable()
export class AuditEvents {
  constructor(
    @InjectRepository(AuditEventEntity) private readonly events: Repository<AuditEventEntity>,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async record(event: NewAuditEvent): Promise<void> {
    // jsonb: TypeORM's insert type cannot describe an open object, so the row goes in through query.
    await this.events.query(
      `INSERT INTO audit_events (id, workspace_id, occurred_at, action, actor_type, actor_id, request_id,
         target_type, target_id, changes) VALUES ($1, $2, now(), $3, $4, $5, $6, $7, $8, $9)`,
      [
        createId(),
        event.workspaceId,
        event.action,
        event.actorType,
        event.actorId,
        event.requestId,
        event.targetType,
        event.targetId,
        JSON.stringify(event.changes),
      ],
    );
  }

  /** A page, newest first by (occurred_at, id): the keyset the workspace's index serves. */
  async list(
    workspaceId: string,
    { action, since, until, after, limit }: AuditFilters,
  ): Promise<{ events: AuditEventEntity[]; nextCursor: string | null }> {
    const query = this.events.createQueryBuilder('e').where('e.workspace_id = :workspaceId', { workspaceId });
    if (action) query.andWhere('e.action = :action', { action });
    if (since) query.andWhere('e.occurred_at >= :since', { since });
    if (until) query.andWhere('e.occurred_at < :until', { until });
    const { rows, nextCursor } = await newestFirstPage(query, {
      workspaceId,
      time: 'occurred_at',
      after,
      limit,
      positionOf: (e) => ({ createdAt: e.occurredAt, id: e.id }),
    });
    return { events: rows, nextCursor };
  }

  /** Deletes events older than AUDIT_RETENTION in small batches; returns how many. */
  @ScheduledJob({ name: 'delete-audit-events-past-retention', every: () => RETENTION_EVERY_MS })
  async purgeOnce(signal?: AbortSignal): Promise<number> {
    const before = new Date(Date.now() - this.config.auditRetentionMs);
    return deleteOlderThan(this.events, { table: 'audit_events', column: 'occurred_at', before }, signal);
  }
}
