import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { CurrentWorkspace } from '../auth/current-workspace.decorator.js';
import type { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { CreateSubmissionDto } from './create-submission.dto.js';
import { serializeSubmission, type SubmissionResponse } from './submission.serializer.js';
import { SubmissionsService } from './submissions.service.js';

@Controller('calculators/:calculatorId/submissions')
export class SubmissionsController {
  constructor(private readonly submissions: SubmissionsService) {}

  @Post()
  @HttpCode(200)
  async create(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('calculatorId') calculatorId: string,
    @Body() dto: CreateSubmissionDto,
  ): Promise<{ data: SubmissionResponse }> {
    return { data: serializeSubmission(await this.submissions.create(workspace.id, calculatorId, dto)) };
  }
}
