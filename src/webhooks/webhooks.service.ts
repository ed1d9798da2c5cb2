import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import { DataSource, IsNull } from 'typeorm';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { ApiError } from '../core/http/api-error.js';
import { prepared, queryPrepared } from '../core/database/prepared.js';
import { isCuid2, newId } from '../core/ids.js';
import { CalculatorsService } from '../calculators/calculators.service.js';
import { DeliveryQueue, type DeliveryJobs } from '../delivery/delivery-queue.js';
import { forbiddenHostRule } from '../delivery/ssrf-guard.js';
import { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import type { CreateWebhookDto } from './create-webhook.dto.js';
import { lockWebhookForRemoval } from './webhook-lock.js';
import { WebhookCalculatorEntity, WebhookEntity, WebhookTriggerEntity } from './webhook.entity.js';
import { canonicalSource, TRIGGER_TYPES } from './webhook-sources.js';
import { serializeWebhookListItem, type WebhookListItem } from './webhook.serializer.js';

interface WebhookListRow {
  id: string;
  workspace_id: string;
  name: string;
  url: string;
  source: string;
  created_at: Date;
  updated_at: Date;
  calculators: { id: string; name: string }[];
  triggers: string[];
}

// One join grouped per webhook: a third cheaper in Postgres than a calculators subquery per webhook.
const LIST_WEBHOOKS = prepared(
  'webhooks_list',
  `SELECT w.id, w.workspace_id, w.name, w.url, w.source, w.created_at, w.updated_at,
     COALESCE(json_agg(json_build_object('id', c.id, 'name', c.name) ORDER BY c.created_at, c.id)
              FILTER (WHERE c.id IS NOT NULL), '[]') AS calculators,
     COALESCE((SELECT json_agg(t.type ORDER BY t.type) FROM webhook_triggers t WHERE t.webhook_id = w.id),
              '[]') AS triggers
   FROM webhooks w
   LEFT JOIN webhook_calculators wc ON wc.webhook_id = w.id
   LEFT JOIN calculators c ON c.id = wc.calculator_id AND c.removed_at IS NULL
   WHERE w.workspace_id = $1 AND w.removed_at IS NULL
   GROUP BY w.id
   ORDER BY w.created_at, w.id`,
);

const GET_ACTIVE_WEBHOOK = prepared(
  'webhooks_get_active',
  `SELECT id, workspace_id AS "workspaceId", name, url, source, secret, created_at AS "createdAt",
     updated_at AS "updatedAt", removed_at AS "removedAt"
   FROM webhooks
   WHERE id = $1 AND workspace_id = $2 AND removed_at IS NULL`,
);

/** Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
export const generateSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

@Injectable()
export class WebhooksService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly calculators: CalculatorsService,
    private readonly queue: DeliveryQueue,
  ) {}

  /** Active webhooks with their calculators and triggers, built in one query. */
  async list(workspaceId: string): Promise<WebhookListItem[]> {
    const rows = await queryPrepared<WebhookListRow>(this.dataSource, LIST_WEBHOOKS, [workspaceId]);
    return rows.map((r) =>
      serializeWebhookListItem(
        {
          id: r.id,
          workspaceId: r.workspace_id,
          name: r.name,
          url: r.url,
          source: r.source,
          createdAt: r.created_at,
          updatedAt: r.updated_at,
        } as WebhookEntity,
        r.calculators,
        r.triggers,
      ),
    );
  }

  async create(workspaceId: string, dto: CreateWebhookDto): Promise<WebhookEntity> {
    this.assertDestinationAllowed(dto.url);
    const calculatorIds = [...new Set(dto.calculators)];
    const triggers = [...new Set(dto.triggers ?? TRIGGER_TYPES)];
    const existing = await this.calculators.existingIds(workspaceId, calculatorIds);
    const unknown = calculatorIds.filter((id) => !existing.has(id));
    if (unknown.length > 0) {
      throw ApiError.badRequest(
        `Unknown calculator${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`,
        unknown.map((id) => ({ field: 'calculators', message: `calculator ${id} does not exist in this workspace` })),
      );
    }
    return this.dataSource.transaction(async (manager) => {
      // The workspace row lock serialises registrations, so the cap holds under concurrent requests.
      await manager
        .createQueryBuilder(WorkspaceEntity, 'w')
        .setLock('pessimistic_write')
        .where('w.id = :workspaceId', { workspaceId })
        .getOne();
      const active = await manager.count(WebhookEntity, { where: { workspaceId, removedAt: IsNull() } });
      if (active >= this.config.maxWebhooksPerWorkspace) {
        throw ApiError.badRequest(
          `This workspace already has the maximum of ${this.config.maxWebhooksPerWorkspace} active webhooks`,
        );
      }
      const now = new Date();
      const webhook = manager.create(WebhookEntity, {
        id: newId(),
        workspaceId,
        name: dto.name ?? '',
        url: dto.url,
        source: canonicalSource(dto.source ?? 'user'),
        secret: generateSigningSecret(),
        createdAt: now,
        updatedAt: now,
        removedAt: null,
      });
      await manager.insert(WebhookEntity, webhook);
      await manager.insert(
        WebhookCalculatorEntity,
        calculatorIds.map((calculatorId) => ({ webhookId: webhook.id, calculatorId })),
      );
      await manager.insert(
        WebhookTriggerEntity,
        triggers.map((type) => ({ webhookId: webhook.id, type })),
      );
      return webhook;
    });
  }

  /** While the SSRF guard is on, a host it would refuse at send time without any lookup is refused now. */
  private assertDestinationAllowed(url: string): void {
    if (this.config.allowPrivateTargets) return;
    const { hostname } = new URL(url);
    const rule = forbiddenHostRule(hostname);
    if (!rule) return;
    throw ApiError.invalidField(
      'url',
      `url must have a public host: ${hostname} is refused by the SSRF guard: ${rule}`,
    );
  }

  async get(workspaceId: string, id: string): Promise<WebhookEntity> {
    // Only a CUID2 can be a webhook id; anything else (a NUL byte would make Postgres fail) is unknown.
    if (!isCuid2(id)) throw ApiError.notFound(`Webhook ${id} not found`);
    const [webhook] = await queryPrepared<WebhookEntity>(this.dataSource, GET_ACTIVE_WEBHOOK, [id, workspaceId]);
    if (!webhook) throw ApiError.notFound(`Webhook ${id} not found`);
    return webhook;
  }

  /**
   * Marks the webhook removed and cancels its pending deliveries. The webhook lock waits for any
   * attempt in flight and holds off new ones, so once this returns nothing more reaches the receiver.
   */
  async remove(workspaceId: string, id: string): Promise<WebhookEntity> {
    await this.get(workspaceId, id); // 404 before taking a lock that another workspace's attempts use
    const { webhook, cancelled } = await this.dataSource.transaction(async (manager) => {
      await lockWebhookForRemoval(manager, id);
      const webhook = await manager
        .createQueryBuilder(WebhookEntity, 'w')
        .setLock('pessimistic_write')
        .where('w.id = :id AND w.workspace_id = :workspaceId AND w.removed_at IS NULL', { id, workspaceId })
        .getOne();
      if (!webhook) throw ApiError.notFound(`Webhook ${id} not found`);
      const now = new Date();
      await manager.update(WebhookEntity, { id }, { removedAt: now, updatedAt: now });
      // TypeORM answers an UPDATE ... RETURNING with [rows, rowCount].
      const [rows]: [DeliveryJobs[], number] = await manager.query(
        `UPDATE deliveries SET status = 'cancelled', next_attempt_at = NULL, completed_at = $2, updated_at = $2
         WHERE webhook_id = $1 AND status = 'pending' RETURNING id AS "deliveryId", max_attempts AS "maxAttempts"`,
        [id, now],
      );
      return { webhook, cancelled: rows };
    });
    await this.queue.remove(cancelled);
    return webhook;
  }
}
