import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentWorkspace } from '../../auth/current-workspace.decorator.js';
import { ApiCursorPage, ApiDataResponse, ApiErrorResponses } from '../../openapi/api-decorators.js';
import type { WorkspaceEntity } from '../../workspaces/workspace.entity.js';
import { decodeCursor } from '../../core/http/log-cursor.js';
import { DeliveryLogService } from './delivery-log.service.js';
import {
  DeliveryDetailResponse,
  DeliveryResponse,
  serializeDelivery,
  serializeDeliveryDetail,
} from './delivery.serializer.js';
import { ListDeliveriesQuery } from './list-deliveries.query.js';

/** The workspace-wide delivery log (DESIGN 7.2), removed webhooks' deliveries included. */
@ApiTags('deliveries')
@Controller('deliveries')
export class WorkspaceDeliveriesController {
  constructor(private readonly log: DeliveryLogService) {}

  @Get()
  @ApiOperation({
    operationId: 'listWorkspaceDeliveries',
    summary: "List the workspace's deliveries, newest first",
    description:
      "Every webhook's deliveries, removed webhooks' too, until retention deletes them; ordered by `createdAt`, " +
      'then `id`, both descending. Pass `nextCursor` as `cursor` for the next page: pages stay stable while new ' +
      "deliveries arrive. Filters combine: by status, webhook, calculator, submission, the last answer's status " +
      'code or class (`statusCode=500`, `statusCode=5xx`) and creation time; each is read from an index in this ' +
      'order. Unknown query parameters are ignored.',
  })
  @ApiCursorPage(DeliveryResponse, 'A page of deliveries; `nextCursor` is null on the last page')
  @ApiErrorResponses(400)
  async list(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Query() { cursor, ...filters }: ListDeliveriesQuery,
  ): Promise<{ data: DeliveryResponse[]; nextCursor: string | null }> {
    const after = decodeCursor(workspace.id, cursor);
    const { deliveries, nextCursor } = await this.log.listWorkspace(workspace.id, { ...filters, after });
    return { data: deliveries.map(serializeDelivery), nextCursor };
  }

  @Get(':deliveryId')
  @ApiOperation({
    operationId: 'getWorkspaceDelivery',
    summary: 'Get a delivery of the workspace with its payload and attempts',
    description: "Also a removed webhook's delivery.",
  })
  @ApiDataResponse(DeliveryDetailResponse, { description: 'The delivery' })
  @ApiErrorResponses(400, 404)
  async get(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('deliveryId') deliveryId: string,
  ): Promise<{ data: DeliveryDetailResponse }> {
    return { data: serializeDeliveryDetail(await this.log.getInWorkspace(workspace.id, deliveryId)) };
  }
}
