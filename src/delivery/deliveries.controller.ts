import { Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { CurrentWorkspace } from '../auth/current-workspace.decorator.js';
import { parsePaging } from '../core/http/paging.js';
import type { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { DeliveryLogService, parseStatusFilter } from './delivery-log.service.js';
import {
  serializeAttempt,
  serializeDelivery,
  type DeliveryDetailResponse,
  type DeliveryResponse,
} from './delivery.serializer.js';

@Controller('webhooks/:webhookId/deliveries')
export class DeliveriesController {
  constructor(private readonly log: DeliveryLogService) {}

  /** Newest first; `status` filters, `limit`/`offset` page as on GET /calculators. */
  @Get()
  async list(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') webhookId: string,
    @Query() query: Record<string, unknown>,
  ): Promise<{ data: DeliveryResponse[] }> {
    const filter = { ...parsePaging(query), status: parseStatusFilter(query.status) };
    const deliveries = await this.log.list(workspace.id, webhookId, filter);
    return { data: deliveries.map(serializeDelivery) };
  }

  @Get(':deliveryId')
  async get(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') webhookId: string,
    @Param('deliveryId') deliveryId: string,
  ): Promise<{ data: DeliveryDetailResponse }> {
    const { delivery, attempts, payload } = await this.log.get(workspace.id, webhookId, deliveryId);
    return { data: { ...serializeDelivery(delivery), payload, attempts: attempts.map(serializeAttempt) } };
  }

  @Post(':deliveryId/retry')
  @HttpCode(202)
  async retry(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') webhookId: string,
    @Param('deliveryId') deliveryId: string,
  ): Promise<{ data: DeliveryResponse }> {
    return { data: serializeDelivery(await this.log.retry(workspace.id, webhookId, deliveryId)) };
  }
}
