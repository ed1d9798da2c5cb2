import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentWorkspace } from '../auth/current-workspace.decorator.js';
import { BodyLimit, SUBMISSION_BODY_LIMIT_BYTES } from '../core/http/json-body.interceptor.js';
import { decodeCursor } from '../core/http/log-cursor.js';
import { ApiCursorPage, ApiDataResponse, ApiErrorResponses } from '../openapi/api-decorators.js';
import type { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { CreateSubmissionDto } from './create-submission.dto.js';
import { ListSubmissionsQuery } from './list-submissions.query.js';
import { SubmissionResponse } from './submission.response.js';
import { serializeSubmission } from './submission.serializer.js';
import { SubmissionsService } from './submissions.service.js';

@ApiTags('submissions')
@Controller()
@BodyLimit(SUBMISSION_BODY_LIMIT_BYTES)
export class SubmissionsController {
  constructor(private readonly submissions: SubmissionsService) {}

  @Post('calculators/:calculatorId/submissions')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'createSubmission',
    summary: 'Submit answers to a calculator',
    description:
      'Fires `newSubmission` to every active webhook bound to the calculator whose filter, if it has one, ' +
      'matches the submission.',
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

  @Get('calculators/:calculatorId/submissions')
  @ApiOperation({
    operationId: 'listSubmissions',
    summary: "List a calculator's submissions, newest first",
    description:
      'Sample data for an integration (the "perform list" of a REST-hook trigger, a polling trigger): each ' +
      "item is exactly the `newSubmission` payload's `data`. Ordered by `createdAt`, then `id`, both " +
      'descending; pass `nextCursor` as `cursor` for the next page (pages are stable while submissions ' +
      "arrive). `filter` tests a webhook's filter against them. Unknown query parameters are ignored.",
  })
  @ApiCursorPage(SubmissionResponse, 'A page of submissions; `nextCursor` is null on the last page')
  @ApiErrorResponses(400, 404)
  async list(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('calculatorId') calculatorId: string,
    @Query() { cursor, ...query }: ListSubmissionsQuery,
  ): Promise<{ data: SubmissionResponse[]; nextCursor: string | null }> {
    const after = decodeCursor(workspace.id, cursor);
    const { submissions, nextCursor } = await this.submissions.list(workspace.id, calculatorId, { ...query, after });
    return { data: submissions.map(serializeSubmission), nextCursor };
  }

  @Get('submissions/:submissionId')
  @ApiOperation({ operationId: 'getSubmission', summary: 'Get a submission' })
  @ApiDataResponse(SubmissionResponse, { description: "The submission, as the `newSubmission` payload's `data`" })
  @ApiErrorResponses(400, 404)
  async get(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('submissionId') id: string,
  ): Promise<{ data: SubmissionResponse }> {
    return { data: serializeSubmission(await this.submissions.get(workspace.id, id)) };
  }
}
