import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentWorkspace } from '../auth/current-workspace.decorator.js';
import { BodyLimit, SUBMISSION_BODY_LIMIT_BYTES } from '../core/http/json-body.interceptor.js';
import { ApiDataResponse, ApiErrorResponses } from '../openapi/api-decorators.js';
import type { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { CreateSubmissionDto } from './create-submission.dto.js';
import { SubmissionResponse } from './submission.response.js';
import { serializeSubmission } from './submission.serializer.js';
import { SubmissionsService } from './submissions.service.js';

@ApiTags('submissions')
@Controller('calculators/:calculatorId/submissions')
@BodyLimit(SUBMISSION_BODY_LIMIT_BYTES)
export class SubmissionsController {
  constructor(private readonly submissions: SubmissionsService) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({
    operationId: 'createSubmission',
    summary: 'Submit answers to a calculator',
    description: 'Fires `newSubmission` to every active webhook bound to the calculator.',
  })
  @ApiDataResponse(SubmissionResponse, { description: 'The recorded submission' })
  @ApiErrorResponses(400, 404, 413)
  async create(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('calculatorId') calculatorId: string,
    @Body() dto: CreateSubmissionDto,
  ): Promise<{ data: SubmissionResponse }> {
    return { data: serializeSubmission(await this.submissions.create(workspace.id, calculatorId, dto)) };
  }
}
