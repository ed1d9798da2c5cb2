import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import { DataSource, IsNull, type EntityManager } from 'typeorm';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { ApiError } from '../core/http/api-error.js';
import {
  queryPrepared,
  queryPreparedOn,
  selectListOf,
  transactionOn,
  type PreparedStatement,
} from '../core/database/prepared.js';
import {
  FILTER_TOTALS,
  WEBHOOK_REGISTER,
  webhookGet,
  WEBHOOKS_LIST,
  WORKSPACE_REGISTRATION_LOCK,
} from './webhook.statements.js';
import { isCuid2, newId } from '../core/ids.js';
import { DeliveryStore } from '../delivery/store/delivery-store.js';
import { forbiddenHostRule } from '../delivery/engine/ssrf-guard.js';
import type { CreateWebhookDto } from './create-webhook.dto.js';
import { headersPatchProblem, type UpdateWebhookDto } from './update-webhook.dto.js';
import { MAX_CUSTOM_HEADERS, mergeHeaders } from './webhook-headers.js';
import { WebhookEntity } from './webhook.entity.js';
import { WebhookFilterCounterEntity } from './webhook-filter-counter.entity.js';
import { assertFilter } from '../submissions/submission-filter.js';
import { canonicalSource, TRIGGER_TYPES } from './webhook-sources.js';
import {
  listedWebhookOf,
  serializeWebhookListItem,
  serializeWebhookSettings,
  type ListedWebhook,
  type ListedWebhookRow,
  type SettingsDefaults,
  type WebhookListItem,
  type WebhookListRow,
  type WebhookSettings,
} from './webhook.serializer.js';

/** Whether a settings patch names any field (an empty one changes nothing, not even updatedAt). */
export const hasChanges = (dto: UpdateWebhookDto | Record<string, unknown>): boolean =>
  Object.values(dto).some((value) => value !== undefined);

/** Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
export const generateSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/** While the SSRF guard is on, a host it would refuse at send time without any lookup is refused now. */
export function assertDestinationAllowed(config: Pick<AppConfig, 'allowPrivateTargets'>, url: string): void {
  if (config.allowPrivateTargets) return;
  const { hostname } = new URL(url);
  const rule = forbiddenHostRule(hostname);
  if (!rule) return;
  throw ApiError.invalidField('url', `url must have a public host: ${hostname} is refused by the SSRF guard: ${rule}`);
}

export function assertWebhookActive(webhook: WebhookEntity): WebhookEntity {
  if (!webhook.disabledAt) return webhook;
  const reason = webhook.disabledReason ?? 'manual';
  throw ApiError.invalidField('webhookId', `webhook ${webhook.id} is disabled (${reason}); enable it first`);
}

@Injectable()
export class WebhooksService {
  private readonly getStatement: PreparedStatement;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly store: DeliveryStore,
  ) {
    this.getStatement = webhookGet(selectListOf(dataSource, WebhookEntity));
  }

  /** Active webhooks with their calculators and triggers, built in one query. */
  async list(workspaceId: string): Promise<WebhookListItem[]> {
    const rows = await queryPrepared<WebhookListRow>(this.dataSource, WEBHOOKS_LIST, [workspaceId]);
    return rows.map(serializeWebhookListItem);
  }

  async create(workspaceId: string, dto: CreateWebhookDto): Promise<ListedWebhook> {
    assertDestinationAllowed(this.config, dto.url);
    const calculatorIds = [...new Set(dto.calculators)];
    const triggers = [...new Set(dto.triggers ?? TRIGGER_TYPES)];
    const now = new Date();
    const webhook = {
      id: newId(),
      workspaceId,
      name: dto.name ?? '',
      url: dto.url,
      source: canonicalSource(dto.source ?? 'user'),
      createdAt: now,
      updatedAt: now,
    };
    const cap = this.config.maxWebhooksPerWorkspace;
    const { active, known } = await transactionOn(this.dataSource, async (client) => {
      await queryPreparedOn(client, WORKSPACE_REGISTRATION_LOCK, [workspaceId]);
      const [row] = await queryPreparedOn<{ active: number; known: string[] }>(client, WEBHOOK_REGISTER, [
        webhook.id,
        workspaceId,
        webhook.name,
        webhook.url,
        webhook.source,
        generateSigningSecret(),
        calculatorIds,
        triggers,
        now,
        cap,
      ]);
      return row;
    });
    const unknown = calculatorIds.filter((id) => !known.includes(id));
    if (unknown.length > 0) {
      throw ApiError.badRequest(
        `Unknown calculator${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`,
        unknown.map((id) => ({ field: 'calculators', message: `calculator ${id} does not exist in this workspace` })),
      );
    }
    if (active >= cap) {
      throw ApiError.badRequest(`This workspace already has the maximum of ${cap} active webhooks`);
    }
    return webhook;
  }

  async get(workspaceId: string, id: string): Promise<WebhookEntity> {
    // Only a CUID2 can be a webhook id; anything else (a NUL byte would make Postgres fail) is unknown.
    if (!isCuid2(id)) throw ApiError.notFound(`Webhook ${id} not found`);
    const [row] = await queryPrepared<WebhookEntity>(this.dataSource, this.getStatement, [id, workspaceId]);
    if (!row) throw ApiError.notFound(`Webhook ${id} not found`);
    return Object.assign(new WebhookEntity(), row);
  }

  /** The webhook, for an operation that sends to it: 400 while it is disabled (DESIGN 7.1). */
  async getActive(workspaceId: string, id: string): Promise<WebhookEntity> {
    return assertWebhookActive(await this.get(workspaceId, id));
  }

  /**
   * Marks the webhook removed and cancels its pending deliveries behind the removal fence: once this
   * returns nothing more reaches the receiver.
   */
  async remove(workspaceId: string, id: string): Promise<ListedWebhook> {
    const stopped = isCuid2(id) ? await this.store.stopWebhook<ListedWebhookRow>('remove', workspaceId, id) : null;
    if (!stopped) throw ApiError.notFound(`Webhook ${id} not found`);
    return listedWebhookOf(stopped);
  }

  /** What a webhook without a timeout or cap of its own follows. */
  private get settingsDefaults(): SettingsDefaults {
    return { timeoutMs: this.config.deliveryTimeoutMs, maxInFlight: this.config.maxInFlightPerWebhook };
  }

  /** The webhook's settings as they apply now, with its filter's counts (DESIGN 10, 11). */
  async settings(webhook: WebhookEntity): Promise<WebhookSettings> {
    if (webhook.filter === null) return serializeWebhookSettings(webhook, this.settingsDefaults, null);
    const [totals] = await queryPrepared<{ passed: string; held_back: string }>(this.dataSource, FILTER_TOTALS, [
      webhook.id,
      webhook.filterVersion,
    ]);
    return serializeWebhookSettings(webhook, this.settingsDefaults, {
      passed: Number(totals.passed),
      heldBack: Number(totals.held_back),
    });
  }

  /**
   * Applies a settings patch (DESIGN 10): the fields given change, null resets one to its default, headers
   * merge (RFC 7396). The row is locked while the merged headers are counted, so two patches cannot
   * together exceed the limit. A disabled webhook can be changed too.
   */
  async updateSettings(workspaceId: string, id: string, dto: UpdateWebhookDto): Promise<WebhookEntity> {
    if (dto.headers !== undefined && dto.headers !== null) {
      // The handler has the body's headers as parsed (@Verbatim): checked again as such.
      const problem = headersPatchProblem(dto.headers);
      if (problem) throw ApiError.invalidField('headers', problem);
    }
    if (!hasChanges(dto)) return this.get(workspaceId, id);
    if (!isCuid2(id)) throw ApiError.notFound(`Webhook ${id} not found`);
    if (typeof dto.filter === 'string') await assertFilter(this.dataSource, 'filter', dto.filter);
    return this.dataSource.transaction(async (manager) => {
      // No key update: a submission writing the filter's counts (their key references the row) never waits.
      const webhook = await manager.findOne(WebhookEntity, {
        where: { id, workspaceId, removedAt: IsNull() },
        lock: { mode: 'for_no_key_update' },
      });
      if (!webhook) throw ApiError.notFound(`Webhook ${id} not found`);
      if (dto.headers !== undefined) {
        const headers = mergeHeaders(webhook.headers, dto.headers);
        if (Object.keys(headers).length > MAX_CUSTOM_HEADERS) {
          throw ApiError.invalidField('headers', `a webhook may have at most ${MAX_CUSTOM_HEADERS} custom headers`);
        }
        webhook.headers = headers;
      }
      if (dto.name !== undefined) webhook.name = dto.name;
      if (dto.timeoutMs !== undefined) webhook.timeoutMs = dto.timeoutMs;
      if (dto.maxInFlight !== undefined) webhook.maxInFlight = dto.maxInFlight;
      if (dto.retrySchedule !== undefined) webhook.retrySchedule = dto.retrySchedule ?? 'standard';
      webhook.updatedAt = new Date();
      if (dto.filter !== undefined && dto.filter !== webhook.filter) await this.setFilter(manager, webhook, dto.filter);
      const { name, headers, timeoutMs, maxInFlight, retrySchedule, updatedAt } = webhook;
      const { filter, filterVersion, filterSetAt } = webhook;
      await manager.update(
        WebhookEntity,
        { id },
        { name, headers, timeoutMs, maxInFlight, retrySchedule, updatedAt, filter, filterVersion, filterSetAt },
      );
      return webhook;
    });
  }

  /**
   * A new filter starts a new version, whose counts start from zero; the previous versions' counts go
   * (a submission that read the previous filter may still add to its own version, never to this one).
   */
  private async setFilter(manager: EntityManager, webhook: WebhookEntity, filter: string | null): Promise<void> {
    webhook.filter = filter;
    webhook.filterVersion += 1;
    webhook.filterSetAt = filter === null ? null : webhook.updatedAt;
    await manager.delete(WebhookFilterCounterEntity, { webhookId: webhook.id });
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
