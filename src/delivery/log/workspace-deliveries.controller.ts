import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiExtraModels, ApiOperation, ApiQuery, ApiResponse, ApiTags, getSchemaPath } from '@nestjs/swagger';
import { CurrentWorkspace } from '../../auth/current-workspace.decorator.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../../core/http/paging.js';
import { ApiDataResponse, ApiErrorResponses } from '../../openapi/api-decorators.js';
import type { WorkspaceEntity } from '../../workspaces/workspace.entity.js';
import { DeliveryLogService } from './delivery-log.service.js';
import { DELIVERY_STATUSES } from '../delivery.entity.js';
import {
  DeliveryDetailResponse,
  DeliveryResponse,
  serializeDelivery,
  serializeDeliveryDetail,
} from './delivery.serializer.js';
import { parseWorkspaceLogQuery } from './delivery-log-query.js';

const ApiTimestampQuery = (name: string, description: string) =>
  ApiQuery({ name, required: false, description, schema: { type: 'string', format: 'date-time' } });
const ApiIdQuery = (name: string, description: string) =>
  ApiQuery({ name, required: false, description, schema: { type: 'string' } });

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
      'deliveries arrive. Unknown query parameters are ignored.',
  })
  @ApiQuery({ name: 'status', required: false, schema: { type: 'string', enum: [...DELIVERY_STATUSES] } })
  @ApiIdQuery('webhookId', "Only this webhook's deliveries")
  @ApiIdQuery('calculatorId', "Only deliveries of this calculator's submissions")
  @ApiTimestampQuery('since', 'Only deliveries created at or after this time')
  @ApiTimestampQuery('until', 'Only deliveries created before this time')
  @ApiQuery({
    name: 'limit',
    required: false,
    description: `Maximum number of deliveries to return; default ${DEFAULT_LIMIT}, larger values are clamped to ${MAX_LIMIT}`,
    schema: { type: 'integer', format: 'int32', minimum: 1, default: DEFAULT_LIMIT },
  })
  @ApiQuery({
    name: 'cursor',
    required: false,
    description: '`nextCursor` of the previous page, as it was given; any other value is a 400',
    schema: { type: 'string' },
  })
  @ApiExtraModels(DeliveryResponse)
  @ApiResponse({
    status: 200,
    description: 'A page of deliveries; `nextCursor` is null on the last page',
    schema: {
      type: 'object',
      required: ['data', 'nextCursor'],
      properties: {
        data: { type: 'array', items: { $ref: getSchemaPath(DeliveryResponse) } },
        nextCursor: { type: 'string', nullable: true },
      },
    },
  })
  @ApiErrorResponses(400)
  async list(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Query() query: Record<string, unknown>,
  ): Promise<{ data: DeliveryResponse[]; nextCursor: string | null }> {
    const filter = parseWorkspaceLogQuery(workspace.id, query);
    const { deliveries, nextCursor } = await this.log.listWorkspace(workspace.id, filter);
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
