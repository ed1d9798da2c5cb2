import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { Audited } from '../audit/audited.js';
import { CurrentWorkspace } from '../auth/current-workspace.decorator.js';
import { ApiDataResponse, ApiErrorResponses } from '../openapi/api-decorators.js';
import type { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { CreateOperationalWebhookDto } from './create-operational-webhook.dto.js';
import {
  CreatedOperationalWebhookResponse,
  OperationalWebhookResponse,
  serializeOperationalWebhook,
} from './operational-webhook.serializer.js';
import { OperationalWebhooksService } from './operational-webhooks.service.js';

const audited = (_req: unknown, { data }: { data: OperationalWebhookResponse }) => ({
  targetType: 'operational_webhook',
  targetId: data.id,
  changes: { url: data.url, events: data.events },
});

@ApiTags('operational-webhooks')
@Controller('operational-webhooks')
export class OperationalWebhooksController {
  constructor(private readonly operationalWebhooks: OperationalWebhooksService) {}

  @Get()
  @ApiOperation({ operationId: 'listOperationalWebhooks', summary: 'List operational webhooks' })
  @ApiDataResponse(OperationalWebhookResponse, { isArray: true, description: 'The workspace’s, oldest first' })
  async list(@CurrentWorkspace() workspace: WorkspaceEntity): Promise<{ data: OperationalWebhookResponse[] }> {
    return { data: (await this.operationalWebhooks.list(workspace.id)).map(serializeOperationalWebhook) };
  }

  @Post()
  @HttpCode(200)
  @ApiOperation({
    operationId: 'createOperationalWebhook',
    summary: 'Register an operational webhook',
    description:
      'A receiver of the workspace’s operational events (see the document’s `webhooks`), signed with the ' +
      'secret in this answer, which is not shown again.',
  })
  @ApiDataResponse(CreatedOperationalWebhookResponse, { description: 'The operational webhook and its secret' })
  @ApiErrorResponses(400, 413)
  @Audited<OperationalWebhookResponse>('operational_webhook.created', audited)
  async create(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Body() dto: CreateOperationalWebhookDto,
  ): Promise<{ data: CreatedOperationalWebhookResponse }> {
    const created = await this.operationalWebhooks.create(workspace.id, dto);
    return { data: { ...serializeOperationalWebhook(created), secret: created.secret } };
  }

  @Get(':operationalWebhookId')
  @ApiOperation({ operationId: 'getOperationalWebhook', summary: 'Get an operational webhook' })
  @ApiDataResponse(OperationalWebhookResponse, { description: 'The operational webhook' })
  @ApiErrorResponses(400, 404)
  async get(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('operationalWebhookId') id: string,
  ): Promise<{ data: OperationalWebhookResponse }> {
    return { data: serializeOperationalWebhook(await this.operationalWebhooks.get(workspace.id, id)) };
  }

  @Delete(':operationalWebhookId')
  @ApiOperation({
    operationId: 'removeOperationalWebhook',
    summary: 'Remove an operational webhook',
    description: 'Its pending events are cancelled: nothing is sent to it once this returns.',
  })
  @ApiDataResponse(OperationalWebhookResponse, { description: 'The removed operational webhook, as it was' })
  @ApiErrorResponses(400, 404)
  @Audited<OperationalWebhookResponse>('operational_webhook.removed', audited)
  async remove(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('operationalWebhookId') id: string,
  ): Promise<{ data: OperationalWebhookResponse }> {
    return { data: serializeOperationalWebhook(await this.operationalWebhooks.remove(workspace.id, id)) };
  }
}
