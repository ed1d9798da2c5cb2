import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import type { SubmissionEntity } from './submission.entity.js';

@ApiSchema({ name: 'Submission' })
export class SubmissionResponse {
  @ApiProperty()
  id: string;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  @ApiProperty({ format: 'date-time' })
  updatedAt: string;

  @ApiProperty()
  calculatorId: string;

  @ApiProperty()
  finished: boolean;

  @ApiProperty({ type: 'object', additionalProperties: true, description: 'The answers, as submitted' })
  data: Record<string, unknown>;

  @ApiProperty({ type: 'object', additionalProperties: true })
  meta: Record<string, unknown>;
}

/** The Submission of DESIGN 4/5, as the API returns it and as webhook payloads carry it. */
export const serializeSubmission = (s: Omit<SubmissionEntity, 'workspaceId'>): SubmissionResponse => ({
  id: s.id,
  createdAt: s.createdAt.toISOString(),
  updatedAt: s.updatedAt.toISOString(),
  calculatorId: s.calculatorId,
  finished: s.finished,
  data: s.data,
  meta: s.meta,
});
