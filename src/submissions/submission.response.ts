import { ApiProperty, ApiSchema } from '@nestjs/swagger';

/**
 * The Submission's shape and OpenAPI schema, in a file of its own: serializeSubmission imports it as a type
 * only, so that the worker (its payloads carry submissions) does not load @nestjs/swagger, megabytes of heap.
 */
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
