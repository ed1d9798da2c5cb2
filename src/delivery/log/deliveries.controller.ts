import { Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { Audited } from '../../audit/audited.js';
import { CurrentWorkspace } from '../../auth/current-workspace.decorator.js';
import { ApiDataResponse, ApiErrorResponses } from '../../openapi/api-decorators.js';
import type { WorkspaceEntity } from '../../workspaces/workspace.entity.js';
import { DeliveryLogService } from './delivery-log.service.js';
import { ListWebhookDeliveriesQuery } from './list-deliveries.query.js';
import {
  DeliveryDetailResponse,
  DeliveryResponse,
  serializeDelivery,
  serializeDeliveryDetail,
} from './delivery.serializer.js';

@ApiTags('deliveries')
@Controller('webhooks/:webhookId/deliveries')
export class DeliveriesController {
  constructor(private readonly log: DeliveryLogService) {}

  /** Newest first; `status` filters, `limit`/`offset` page as on GET /calculators. */
  @Get()
  @ApiOperation({ operationId: 'listDeliveries', summary: 'List the deliveries of a webhook, newest first' })
  @ApiDataResponse(DeliveryResponse, { isArray: true, description: 'Deliveries of the webhook' })
  @ApiErrorResponses(400, 404)
  async list(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') webhookId: string,
    @Query() query: ListWebhookDeliveriesQuery,
  ): Promise<{ data: DeliveryResponse[] }> {
    const deliveries = await this.log.list(workspace.id, webhookId, query);
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
    return { data: serializeDeliveryDetail(await this.log.get(workspace.id, webhookId, deliveryId)) };
  }

  @Post(':deliveryId/retry')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'retryDelivery',
    summary: 'Send a delivery now',
    description:
      'An ended delivery (succeeded, failed or skipped) gets one more attempt now, with the same webhook-id; a ' +
      'pending one has its next attempt moved to now (no attempt is added). 400 while the webhook is disabled.',
  })
  @ApiDataResponse(DeliveryResponse, { status: 202, description: 'The delivery, pending, its next attempt now' })
  @ApiErrorResponses(400, 404)
  @Audited<DeliveryResponse>('delivery.retried', (req, { data }) => ({
    targetType: 'delivery',
    targetId: data.id,
    changes: { webhookId: req.params.webhookId },
  }))
  async retry(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') webhookId: string,
    @Param('deliveryId') deliveryId: string,
  ): Promise<{ data: DeliveryResponse }> {
    return { data: serializeDelivery(await this.log.retry(workspace.id, webhookId, deliveryId)) };
  }
}
