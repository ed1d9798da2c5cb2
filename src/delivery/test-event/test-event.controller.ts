import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentWorkspace } from '../../auth/current-workspace.decorator.js';
import { NoBodyPipe } from '../../core/http/validation.js';
import { ApiDataResponse, ApiErrorResponses } from '../../openapi/api-decorators.js';
import type { WorkspaceEntity } from '../../workspaces/workspace.entity.js';
import { DeliveryResponse, serializeDelivery } from '../log/delivery.serializer.js';
import { TestEventService } from './test-event.service.js';

@ApiTags('deliveries')
@Controller('webhooks/:webhookId')
export class TestEventController {
  constructor(private readonly testEvents: TestEventService) {}

  @Post('test')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'sendTestEvent',
    summary: 'Send a test event to a webhook',
    description:
      'A signed delivery of a sample submission (`meta.test: true`, `calculatorId` one of the webhook’s ' +
      'calculators), logged and retried like any other; no submission is stored. 400 while the webhook is ' +
      'disabled. Takes no body.',
  })
  @ApiDataResponse(DeliveryResponse, { status: 202, description: 'The test delivery, pending' })
  @ApiErrorResponses(400, 404, 413)
  async send(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('webhookId') webhookId: string,
    @Body(NoBodyPipe) _body: undefined,
  ): Promise<{ data: DeliveryResponse }> {
    return { data: serializeDelivery(await this.testEvents.send(workspace.id, webhookId)) };
  }
}
