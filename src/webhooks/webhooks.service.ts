import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import { DataSource, IsNull } from 'typeorm';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { ApiError } from '../core/http/api-error.js';
import { queryPrepared } from '../core/database/prepared.js';
import { WEBHOOKS_LIST } from '../core/database/statements.js';
import { isCuid2, newId } from '../core/ids.js';
import { CalculatorsService } from '../calculators/calculators.service.js';
import { DeliveryQueue } from '../delivery/delivery-queue.js';
import { RecoveryEntity } from '../delivery/recovery.entity.js';
import { forbiddenHostRule } from '../delivery/ssrf-guard.js';
import { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import type { CreateWebhookDto } from './create-webhook.dto.js';
import { stopWebhook } from './webhook-lock.js';
import { WebhookCalculatorEntity, WebhookEntity, WebhookTriggerEntity } from './webhook.entity.js';
import { canonicalSource, TRIGGER_TYPES } from './webhook-sources.js';
import { serializeWebhookListItem, type WebhookListItem } from './webhook.serializer.js';

/** A row of WEBHOOKS_LIST: a webhook's listed fields with its calculators and trigger types. */
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

/** Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
export const generateSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

export function assertWebhookActive(webhook: WebhookEntity): WebhookEntity {
  if (!webhook.disabledAt) return webhook;
  const reason = webhook.disabledReason ?? 'manual';
  throw ApiError.invalidField('webhookId', `webhook ${webhook.id} is disabled (${reason}); enable it first`);
}

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
    const rows = await queryPrepared<WebhookListRow>(this.dataSource, WEBHOOKS_LIST, [workspaceId]);
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
        },
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
    const webhook = await this.dataSource
      .getRepository(WebhookEntity)
      .findOneBy({ id, workspaceId, removedAt: IsNull() });
    if (!webhook) throw ApiError.notFound(`Webhook ${id} not found`);
    return webhook;
  }

  /** The webhook, for an operation that sends to it: 400 while it is disabled (DESIGN 7.1). */
  async getActive(workspaceId: string, id: string): Promise<WebhookEntity> {
    return assertWebhookActive(await this.get(workspaceId, id));
  }

  /**
   * Marks the webhook removed and cancels its pending deliveries. The webhook lock waits for any
   * attempt in flight and holds off new ones, so once this returns nothing more reaches the receiver.
   */
  async remove(workspaceId: string, id: string): Promise<WebhookEntity> {
    await this.get(workspaceId, id); // 404 before taking a lock that another workspace's attempts use
    const now = new Date();
    const { webhook, ended } = await this.dataSource.transaction(async (manager) => {
      const stopped = await stopWebhook(manager, workspaceId, id, { removedAt: now, updatedAt: now }, 'cancelled');
      // A running recovery (DESIGN 7.3) ends with its webhook.
      await manager.update(
        RecoveryEntity,
        { webhookId: id, status: 'running' },
        { status: 'cancelled', completedAt: now, updatedAt: now },
      );
      return stopped;
    });
    await this.queue.remove(ended);
    return webhook;
  }

  /**
   * A new signing secret (DESIGN 7.5); the current one stays valid for `overlapSeconds` as the previous
   * key (attempts carry both signatures), replacing any earlier previous key.
   */
  async rotateSecret(
    workspaceId: string,
    id: string,
    overlapSeconds: number,
  ): Promise<Pick<WebhookEntity, 'secret' | 'previousSecretExpiresAt'>> {
    await this.get(workspaceId, id);
    const expiresAt = overlapSeconds > 0 ? new Date(Date.now() + overlapSeconds * 1000) : null;
    const result = await this.dataSource
      .createQueryBuilder()
      .update(WebhookEntity)
      // Reads the row's secret as it is when updated, so of two concurrent rotations the newest previous wins.
      .set({
        secret: generateSigningSecret(),
        previousSecret: () => (expiresAt ? 'secret' : 'NULL'),
        previousSecretExpiresAt: expiresAt,
      })
      .where('id = :id AND workspace_id = :workspaceId AND removed_at IS NULL', { id, workspaceId })
      .returning('secret, previous_secret_expires_at')
      .execute();
    const [row] = result.raw as { secret: string; previous_secret_expires_at: Date | null }[];
    if (!row) throw ApiError.notFound(`Webhook ${id} not found`);
    return { secret: row.secret, previousSecretExpiresAt: row.previous_secret_expires_at };
  }
}
