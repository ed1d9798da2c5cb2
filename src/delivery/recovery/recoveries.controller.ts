import { Body, Controller, Get, HttpCode, Param, Post, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Audited } from '../../audit/audited.js';
import { CurrentWorkspace } from '../../auth/current-workspace.decorator.js';
import { ApiDataResponse, ApiErrorResponses } from '../../openapi/api-decorators.js';
import type { WorkspaceEntity } from '../../workspaces/workspace.entity.js';
import { RecoverWebhookDto } from './recover-webhook.dto.js';
import { RecoveriesService } from './recoveries.service.js';
import { RecoveryDryRunResponse, RecoveryResponse, serializeRecovery } from './recovery.serializer.js';

@ApiTags('deliveries')
@Controller('webhooks/:webhookId')
export class RecoveriesController {
  constructor(private readonly recoveries: RecoveriesService) {}

  @Post('recover')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'recoverWebhook',
    summary: 'Send again the failed and skipped deliveries of a time range',
    description:
      'Every delivery of this webhook created in [since, until) whose status is `failed` or `skipped` gets one ' +
      'more attempt, with the same `webhook-id`. The worker carries the recovery out in batches; poll it with ' +
      'GET /webhooks/{webhookId}/recoveries/{recoveryId}. With `dryRun: true`, only counts (200). A disabled ' +
      'webhook is a 400 (enable it first); removing the webhook cancels a running recovery.',
  })
  @ApiDataResponse(RecoveryResponse, { status: 202, description: 'The recovery, running' })
  @ApiDataResponse(RecoveryDryRunResponse, { description: 'Dry run: how many deliveries would be sent again' })
  @ApiErrorResponses(400, 404, 413)
  @Audited<RecoveryResponse | RecoveryDryRunResponse>('recovery.started', (req, { data }) =>
    'id' in data
      ? {
          targetType: 'recovery',
          targetId: data.id,
          changes: { webhookId: req.params.webhookId, since: data.since, until: data.until },
        }
      : null,
  )
  async recover(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') webhookId: string,
    @Body() dto: RecoverWebhookDto,
    @Res({ passthrough: true }) res: Response,
  ): Promise<{ data: RecoveryResponse | RecoveryDryRunResponse }> {
    const outcome = await this.recoveries.recover(workspace.id, webhookId, dto);
    if (outcome.dryRun) {
      res.status(200);
      return { data: { matched: outcome.matched } };
    }
    return { data: serializeRecovery(outcome.recovery) };
  }

  @Get('recoveries/:recoveryId')
  @ApiOperation({ operationId: 'getRecovery', summary: 'Get a recovery and its progress' })
  @ApiDataResponse(RecoveryResponse, { description: 'The recovery' })
  @ApiErrorResponses(400, 404)
  async get(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') webhookId: string,
    @Param('recoveryId') recoveryId: string,
  ): Promise<{ data: RecoveryResponse }> {
    return { data: serializeRecovery(await this.recoveries.get(workspace.id, webhookId, recoveryId)) };
  }
}
