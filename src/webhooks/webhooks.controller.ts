import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Req, UseFilters } from '@nestjs/common';
import type { Request } from 'express';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentWorkspace } from '../auth/current-workspace.decorator.js';
import { EmptyTextBadRequestFilter } from '../core/http/http-exception.filter.js';
import { NoBodyPipe } from '../core/http/validation.js';
import { ApiDataResponse, ApiEmptyTextBadRequest, ApiErrorResponses } from '../openapi/api-decorators.js';
import type { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { Audited, unchanged } from '../audit/audited.js';
import { CreateWebhookDto } from './create-webhook.dto.js';
import { DEFAULT_OVERLAP_SECONDS, RotateSecretDto } from './rotate-secret.dto.js';
import { UpdateWebhookDto } from './update-webhook.dto.js';
import { WebhookHealthService } from './webhook-health.service.js';
import {
  serializeWebhook,
  serializeWebhookSecret,
  WebhookHealth,
  WebhookListItem,
  WebhookResponse,
  WebhookSecret,
  WebhookSettings,
} from './webhook.serializer.js';
import { hasChanges, WebhooksService } from './webhooks.service.js';

/**
 * What a settings change records (DESIGN 10): each field given with its new value; headers by name only,
 * `set` or `removed` (`*` when all were), never a value.
 */
function settingsChanges(body: Record<string, unknown>): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  for (const field of ['name', 'timeoutMs', 'maxInFlight', 'retrySchedule', 'filter']) {
    if (body[field] !== undefined) changes[field] = body[field];
  }
  const headers = body.headers as Record<string, unknown> | null | undefined;
  if (headers === null) changes.headers = { '*': 'removed' };
  else if (headers !== undefined) {
    changes.headers = Object.fromEntries(
      Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value === null ? 'removed' : 'set']),
    );
  }
  return changes;
}

@ApiTags('webhooks')
@Controller('webhooks')
export class WebhooksController {
  constructor(
    private readonly webhooks: WebhooksService,
    private readonly healthService: WebhookHealthService,
  ) {}

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
  @Audited<WebhookResponse>('webhook.created', (_req, { data }) => ({
    targetType: 'webhook',
    targetId: data.id,
    changes: { url: data.url, name: data.name },
  }))
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

  @Patch(':webhookId')
  @ApiOperation({
    operationId: 'updateWebhookSettings',
    summary: "Change a webhook's settings",
    description:
      'Any of `name`, `headers`, `timeoutMs`, `maxInFlight`, `retrySchedule`, `filter` (extension, DESIGN 10 ' +
      'and 11); `url` and ' +
      'calculators stay as registered (remove the webhook and register it again to change them). Fields not ' +
      'sent stay as they are; null resets one to the default. Workers apply a change from the next attempt ' +
      'they claim of the webhook on. Answers the settings as they now apply.',
  })
  @ApiDataResponse(WebhookSettings, { description: 'The settings, header values masked' })
  @ApiErrorResponses(400, 404, 413)
  @Audited<WebhookSettings>('webhook.settings_changed', (req) => {
    // The body as parsed, an object once validated; a PATCH without one changed nothing.
    const body = (req.body ?? {}) as Record<string, unknown>;
    return hasChanges(body)
      ? { targetType: 'webhook', targetId: req.params.webhookId as string, changes: settingsChanges(body) }
      : null;
  })
  async updateSettings(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') id: string,
    @Body() dto: UpdateWebhookDto,
  ): Promise<{ data: WebhookSettings }> {
    return { data: await this.webhooks.settings(await this.webhooks.updateSettings(workspace.id, id, dto)) };
  }

  @Get(':webhookId/settings')
  @ApiOperation({ operationId: 'getWebhookSettings', summary: "Get a webhook's settings (header values masked)" })
  @ApiDataResponse(WebhookSettings, { description: 'The settings as they apply now' })
  @ApiErrorResponses(400, 404)
  async settings(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') id: string,
  ): Promise<{ data: WebhookSettings }> {
    return { data: await this.webhooks.settings(await this.webhooks.get(workspace.id, id)) };
  }

  @Delete(':webhookId')
  @ApiOperation({ operationId: 'removeWebhook', summary: 'Remove a webhook' })
  @ApiDataResponse(WebhookResponse, { description: 'The removed webhook, as it was; it never fires again' })
  @ApiErrorResponses(400, 404)
  @Audited<WebhookResponse>('webhook.removed', (_req, { data }) => ({
    targetType: 'webhook',
    targetId: data.id,
    changes: { url: data.url, name: data.name },
  }))
  async remove(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') id: string,
  ): Promise<{ data: WebhookResponse }> {
    return { data: serializeWebhook(await this.webhooks.remove(workspace.id, id)) };
  }

  @Get(':webhookId/secret')
  @ApiOperation({ operationId: 'getWebhookSecret', summary: 'Get the signing secret of a webhook' })
  @ApiDataResponse(WebhookSecret, { description: 'The signing secret, and until when the previous one also signs' })
  @ApiErrorResponses(400, 404)
  async secret(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') id: string,
  ): Promise<{ data: WebhookSecret }> {
    return { data: serializeWebhookSecret(await this.webhooks.get(workspace.id, id)) };
  }

  @Post(':webhookId/secret/rotate')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'rotateWebhookSecret',
    summary: 'Rotate the signing secret of a webhook',
    description:
      'A new key signs from now on; until `previousKeyExpiresAt` every attempt carries a signature by each key ' +
      '(`webhook-signature: v1,<new> v1,<previous>`). A second rotation keeps only the newest previous key.',
  })
  @ApiDataResponse(WebhookSecret, { description: 'The new key, and until when the previous one also signs' })
  @ApiErrorResponses(400, 404, 413)
  @Audited<WebhookSecret>('webhook.secret_rotated', (req, { data }) => ({
    targetType: 'webhook',
    targetId: req.params.webhookId as string,
    changes: { previousKeyExpiresAt: data.previousKeyExpiresAt },
  }))
  async rotateSecret(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') id: string,
    @Body() dto: RotateSecretDto,
  ): Promise<{ data: WebhookSecret }> {
    const overlap = dto.overlapSeconds ?? DEFAULT_OVERLAP_SECONDS;
    return { data: serializeWebhookSecret(await this.webhooks.rotateSecret(workspace.id, id, overlap)) };
  }

  @Get(':webhookId/health')
  @ApiOperation({ operationId: 'getWebhookHealth', summary: 'Get whether a webhook sends, and how its attempts go' })
  @ApiDataResponse(WebhookHealth, { description: 'The health of the webhook' })
  @ApiErrorResponses(400, 404)
  async health(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') id: string,
  ): Promise<{ data: WebhookHealth }> {
    return { data: await this.healthService.health(workspace.id, id) };
  }

  @Post(':webhookId/disable')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'disableWebhook',
    summary: 'Pause a webhook',
    description:
      'Nothing is sent to it once this returns: its pending deliveries and those of new submissions are ' +
      '`skipped`. On a disabled webhook it changes nothing. Takes no body.',
  })
  @ApiDataResponse(WebhookHealth, { description: 'The health of the webhook, disabled' })
  @ApiErrorResponses(400, 404, 413)
  @Audited('webhook.disabled', (req) => ({ targetType: 'webhook', targetId: req.params.webhookId as string }))
  async disable(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') id: string,
    @Body(NoBodyPipe) _body: undefined,
    @Req() req: Request,
  ): Promise<{ data: WebhookHealth }> {
    const { health, changed } = await this.healthService.disable(workspace.id, id);
    if (!changed) unchanged(req);
    return { data: health };
  }

  @Post(':webhookId/enable')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'enableWebhook',
    summary: 'Resume a webhook',
    description: 'Sends again from now on, with the failure streak reset; skipped deliveries stay skipped. No body.',
  })
  @ApiDataResponse(WebhookHealth, { description: 'The health of the webhook, active' })
  @ApiErrorResponses(400, 404, 413)
  @Audited('webhook.enabled', (req) => ({ targetType: 'webhook', targetId: req.params.webhookId as string }))
  async enable(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') id: string,
    @Body(NoBodyPipe) _body: undefined,
    @Req() req: Request,
  ): Promise<{ data: WebhookHealth }> {
    const { health, changed } = await this.healthService.enable(workspace.id, id);
    if (!changed) unchanged(req);
    return { data: health };
  }
}
