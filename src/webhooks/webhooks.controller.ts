import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { CurrentWorkspace } from '../auth/current-workspace.decorator.js';
import type { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { CreateWebhookDto } from './create-webhook.dto.js';
import { serializeWebhook, type WebhookListItem, type WebhookResponse } from './webhook.serializer.js';
import { WebhooksService } from './webhooks.service.js';

@Controller('webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Get()
  async list(@CurrentWorkspace() workspace: WorkspaceEntity): Promise<{ data: WebhookListItem[] }> {
    return { data: await this.webhooks.list(workspace.id) };
  }

  @Post()
  @HttpCode(200)
  async create(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Body() dto: CreateWebhookDto,
  ): Promise<{ data: WebhookResponse }> {
    return { data: serializeWebhook(await this.webhooks.create(workspace.id, dto)) };
  }

  @Get(':webhookId')
  async get(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') id: string,
  ): Promise<{ data: WebhookResponse }> {
    return { data: serializeWebhook(await this.webhooks.get(workspace.id, id)) };
  }

  @Delete(':webhookId')
  async remove(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') id: string,
  ): Promise<{ data: WebhookResponse }> {
    return { data: serializeWebhook(await this.webhooks.remove(workspace.id, id)) };
  }

  @Get(':webhookId/secret')
  async secret(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') id: string,
  ): Promise<{ data: { key: string } }> {
    return { data: { key: (await this.webhooks.get(workspace.id, id)).secret } };
  }
}
