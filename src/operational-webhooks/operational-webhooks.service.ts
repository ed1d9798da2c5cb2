import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { queryPrepared, queryPreparedOn, transactionOn } from '../core/database/prepared.js';
import { ApiError } from '../core/http/api-error.js';
import { isCuid2, newId } from '../core/ids.js';
import { DeliveryStore } from '../delivery/store/delivery-store.js';
import { WORKSPACE_REGISTRATION_LOCK } from '../webhooks/webhook.statements.js';
import { assertDestinationAllowed, generateSigningSecret } from '../webhooks/webhooks.service.js';
import type { CreateOperationalWebhookDto } from './create-operational-webhook.dto.js';
import type { OperationalEventType } from './operational-event.js';
import {
  OPERATIONAL_WEBHOOK_GET,
  OPERATIONAL_WEBHOOK_REGISTER,
  OPERATIONAL_WEBHOOKS_LIST,
} from './operational-webhook.statements.js';
import type { OperationalWebhookRow } from './operational-webhook.serializer.js';

/** A workspace needs a few receivers of its operations (one per team or tool), not a webhook's hundred. */
export const MAX_OPERATIONAL_WEBHOOKS = 10;

/**
 * Operational webhooks (DESIGN 10): registered, listed and removed here; their events are emitted by
 * OperationalEvents and sent by the delivery engine like any delivery.
 */
@Injectable()
export class OperationalWebhooksService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly store: DeliveryStore,
  ) {}

  list(workspaceId: string): Promise<OperationalWebhookRow[]> {
    return queryPrepared<OperationalWebhookRow>(this.dataSource, OPERATIONAL_WEBHOOKS_LIST, [workspaceId]);
  }

  async get(workspaceId: string, id: string): Promise<OperationalWebhookRow> {
    // Only a CUID2 can be an id; anything else (a NUL byte would make Postgres fail) is unknown.
    const [row] = isCuid2(id)
      ? await queryPrepared<OperationalWebhookRow>(this.dataSource, OPERATIONAL_WEBHOOK_GET, [workspaceId, id])
      : [];
    if (!row) throw ApiError.notFound(`Operational webhook ${id} not found`);
    return row;
  }

  /** Returns the new operational webhook with its signing secret, which is shown this once. */
  async create(
    workspaceId: string,
    dto: CreateOperationalWebhookDto,
  ): Promise<OperationalWebhookRow & { secret: string }> {
    assertDestinationAllowed(this.config, dto.url);
    const id = newId();
    const secret = generateSigningSecret();
    const events = [...new Set(dto.events)] as OperationalEventType[];
    const { active } = await transactionOn(this.dataSource, async (client) => {
      await queryPreparedOn(client, WORKSPACE_REGISTRATION_LOCK, [workspaceId]);
      const [row] = await queryPreparedOn<{ active: number }>(client, OPERATIONAL_WEBHOOK_REGISTER, [
        id,
        workspaceId,
        dto.url,
        secret,
        events,
        new Date(),
        MAX_OPERATIONAL_WEBHOOKS,
      ]);
      return row;
    });
    if (active >= MAX_OPERATIONAL_WEBHOOKS) {
      throw ApiError.badRequest(
        `This workspace already has the maximum of ${MAX_OPERATIONAL_WEBHOOKS} operational webhooks`,
      );
    }
    return { ...(await this.get(workspaceId, id)), secret };
  }

  /**
   * As a webhook's DELETE, behind the same removal fence: its pending events are cancelled and once this
   * returns nothing more is sent to it. Returns it as it was.
   */
  async remove(workspaceId: string, id: string): Promise<OperationalWebhookRow> {
    const current = await this.get(workspaceId, id);
    const stopped = await this.store.stopWebhook<{ url: string }>('remove-operational', workspaceId, id);
    if (!stopped) throw ApiError.notFound(`Operational webhook ${id} not found`);
    return current;
  }
}
