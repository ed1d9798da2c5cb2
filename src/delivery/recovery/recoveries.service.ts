import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, type EntityManager, type Repository } from 'typeorm';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { ApiError } from '../../core/http/api-error.js';
import { assertBefore, parseTimestamp } from '../../core/http/timestamps.js';
import { isCuid2, newId } from '../../core/ids.js';
import { WebhookEntity } from '../../webhooks/webhook.entity.js';
import { WebhooksService } from '../../webhooks/webhooks.service.js';
import { DeliveryEntity } from '../delivery.entity.js';
import type { RecoverWebhookDto } from './recover-webhook.dto.js';
import { TRANSITIONS } from '../store/delivery-lifecycle.js';
import { RecoveryEntity } from './recovery.entity.js';

export type RecoverOutcome = { dryRun: true; matched: number } | { dryRun: false; recovery: RecoveryEntity };

/**
 * The API side of recovery (DESIGN 7.3): checks the request, counts what it matches and records the
 * recovery; the worker's RecoveryRunner (recovery.runner.ts) carries it out.
 */
@Injectable()
export class RecoveriesService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(RecoveryEntity) private readonly recoveries: Repository<RecoveryEntity>,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly webhooks: WebhooksService,
  ) {}

  async recover(workspaceId: string, webhookId: string, dto: RecoverWebhookDto): Promise<RecoverOutcome> {
    await this.webhooks.get(workspaceId, webhookId);
    const { since, until } = this.range(dto);
    return this.dataSource.transaction(async (manager) => {
      // Key-share lock: a concurrent DELETE (FOR UPDATE) waits for this recovery to exist, then cancels it.
      const webhook = await manager
        .createQueryBuilder(WebhookEntity, 'w')
        .setLock('for_key_share')
        .where('w.id = :webhookId AND w.workspace_id = :workspaceId AND w.removed_at IS NULL', {
          webhookId,
          workspaceId,
        })
        .getOne();
      if (!webhook) throw ApiError.notFound(`Webhook ${webhookId} not found`);
      if (webhook.disabledAt) throw ApiError.badRequest('The webhook is disabled: enable it first, then recover');
      const matched = await this.countMatching(manager, webhookId, since, until);
      if (dto.dryRun) return { dryRun: true, matched };
      const now = new Date();
      const recovery = manager.create(RecoveryEntity, {
        id: newId(),
        workspaceId,
        webhookId,
        since,
        until,
        status: 'running',
        matched,
        requeued: 0,
        cursorCreatedAt: null,
        cursorId: null,
        createdAt: now,
        updatedAt: now,
        completedAt: null,
      });
      await manager.insert(RecoveryEntity, recovery);
      return { dryRun: false, recovery };
    });
  }

  async get(workspaceId: string, webhookId: string, recoveryId: string): Promise<RecoveryEntity> {
    await this.webhooks.get(workspaceId, webhookId);
    if (!isCuid2(recoveryId)) throw ApiError.notFound(`Recovery ${recoveryId} not found`);
    const recovery = await this.recoveries.findOneBy({ id: recoveryId, webhookId, workspaceId });
    if (!recovery) throw ApiError.notFound(`Recovery ${recoveryId} not found`);
    return recovery;
  }

  /** [since, until): until defaults to (and is capped at) now; since must be within retention. */
  private range(dto: RecoverWebhookDto): { since: Date; until: Date } {
    const now = new Date();
    const since = parseTimestamp('since', dto.since);
    const given = dto.until === undefined ? now : parseTimestamp('until', dto.until);
    // Deliveries created later are not this recovery's: a future `until` means now.
    const until = given > now ? now : given;
    assertBefore(since, until);
    if (since.getTime() < now.getTime() - this.config.deliveryRetentionMs) {
      throw ApiError.invalidField(
        'since',
        'is older than the delivery retention (DELIVERY_RETENTION): those deliveries are deleted',
      );
    }
    return { since, until };
  }

  private countMatching(manager: EntityManager, webhookId: string, since: Date, until: Date): Promise<number> {
    return manager
      .createQueryBuilder(DeliveryEntity, 'd')
      .where('d.webhook_id = :webhookId AND d.created_at >= :since AND d.created_at < :until', {
        webhookId,
        since,
        until,
      })
      .andWhere('d.status IN (:...statuses)', { statuses: TRANSITIONS.recover.from })
      .getCount();
  }
}
