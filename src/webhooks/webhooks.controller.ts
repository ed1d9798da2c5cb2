import { Body, Controller, Delete, Get, HttpCode, Param, Post, UseFilters } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentWorkspace } from '../auth/current-workspace.decorator.js';
import { EmptyTextBadRequestFilter } from '../core/http/http-exception.filter.js';
import { ApiDataResponse, ApiEmptyTextBadRequest, ApiErrorResponses } from '../openapi/api-decorators.js';
import type { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { CreateWebhookDto } from './create-webhook.dto.js';
import { serializeWebhook, WebhookListItem, WebhookResponse, WebhookSecret } from './webhook.serializer.js';
import { WebhooksService } from './webhooks.service.js';

@ApiTags('webhooks')
@Controller('webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Get()
  @ApiOperation({ operationId: 'listWebhooks', summary: 'List webhooks' })
  @ApiDataResponse(WebhookListItem, { isArray: true, description: 'All active webhooks of the workspace' })
  @ApiEmptyTextBadRequest()
  @UseFilters(EmptyTextBadRequestFilter) // the spec: a 400 here is text/plain with an empty body
  async list(@CurrentWorkspace() workspace: WorkspaceEntity): Promise<{ data: WebhookListItem[] }> {
    return { data: await this.webhooks.list(workspace.id) };
  }

  @Post()
  @HttpCode(200)
  @ApiOperation({ operationId: 'createWebhook', summary: 'Register a webhook' })
  @ApiDataResponse(WebhookResponse, { description: 'The registered webhook, active immediately' })
  @ApiErrorResponses(400, 413)
  async create(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Body() dto: CreateWebhookDto,
  ): Promise<{ data: WebhookResponse }> {
    return { data: serializeWebhook(await this.webhooks.create(workspace.id, dto)) };
  }

  @Get(':webhookId')
  @ApiOperation({ operationId: 'getWebhook', summary: 'Get a webhook' })
  @ApiDataResponse(WebhookResponse, { description: 'The webhook' })
  @ApiErrorResponses(400, 404)
  async get(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') id: string,
  ): Promise<{ data: WebhookResponse }> {
    return { data: serializeWebhook(await this.webhooks.get(workspace.id, id)) };
  }

  @Delete(':webhookId')
  @ApiOperation({ operationId: 'removeWebhook', summary: 'Remove a webhook' })
  @ApiDataResponse(WebhookResponse, { description: 'The removed webhook, as it was; it never fires again' })
  @ApiErrorResponses(400, 404)
  async remove(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') id: string,
  ): Promise<{ data: WebhookResponse }> {
    return { data: serializeWebhook(await this.webhooks.remove(workspace.id, id)) };
  }

  @Get(':webhookId/secret')
  @ApiOperation({ operationId: 'getWebhookSecret', summary: 'Get the signing secret of a webhook' })
  @ApiDataResponse(WebhookSecret, { description: 'The signing secret' })
  @ApiErrorResponses(400, 404)
  async secret(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') id: string,
  ): Promise<{ data: { key: string } }> {
    return { data: { key: (await this.webhooks.get(workspace.id, id)).secret } };
  }
}
