import { Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { CurrentWorkspace } from '../auth/current-workspace.decorator.js';
import { parsePaging } from '../core/http/paging.js';
import { ApiDataResponse, ApiErrorResponses, ApiPagingQuery } from '../openapi/api-decorators.js';
import type { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { DeliveryLogService, parseStatusFilter } from './delivery-log.service.js';
import { DELIVERY_STATUSES } from './delivery.entity.js';
import {
  DeliveryDetailResponse,
  DeliveryResponse,
  serializeAttempt,
  serializeDelivery,
} from './delivery.serializer.js';

@ApiTags('deliveries')
@Controller('webhooks/:webhookId/deliveries')
export class DeliveriesController {
  constructor(private readonly log: DeliveryLogService) {}

  /** Newest first; `status` filters, `limit`/`offset` page as on GET /calculators. */
  @Get()
  @ApiOperation({ operationId: 'listDeliveries', summary: 'List the deliveries of a webhook, newest first' })
  @ApiQuery({ name: 'status', required: false, schema: { type: 'string', enum: [...DELIVERY_STATUSES] } })
  @ApiPagingQuery()
  @ApiDataResponse(DeliveryResponse, { isArray: true, description: 'Deliveries of the webhook' })
  @ApiErrorResponses(400, 404)
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
  @ApiOperation({ operationId: 'getDelivery', summary: 'Get a delivery with its payload and attempts' })
  @ApiDataResponse(DeliveryDetailResponse, { description: 'The delivery' })
  @ApiErrorResponses(400, 404)
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
  @ApiOperation({
    operationId: 'retryDelivery',
    summary: 'Send an ended delivery once more',
    description: 'Queues one more attempt now, with the same webhook-id; 400 while the delivery is pending.',
  })
  @ApiDataResponse(DeliveryResponse, { status: 202, description: 'The delivery, pending again' })
  @ApiErrorResponses(400, 404)
  async retry(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') webhookId: string,
    @Param('deliveryId') deliveryId: string,
  ): Promise<{ data: DeliveryResponse }> {
    return { data: serializeDelivery(await this.log.retry(workspace.id, webhookId, deliveryId)) };
  }
}
