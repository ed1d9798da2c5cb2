import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsBoolean, IsObject, ValidateIf } from 'class-validator';
import { Verbatim } from '../core/http/validation.js';

@ApiSchema({ name: 'CreateSubmission' })
export class CreateSubmissionDto {
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'The answers', example: { email: 'a@b.c' } })
  @IsObject({ message: 'data must be a JSON object' })
  @Verbatim()
  data: Record<string, unknown>;

  @ApiPropertyOptional({ default: true })
  @ValidateIf((o: CreateSubmissionDto) => o.finished !== undefined)
  @IsBoolean()
  finished?: boolean;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, default: {} })
  @ValidateIf((o: CreateSubmissionDto) => o.meta !== undefined)
  @IsObject({ message: 'meta must be a JSON object' })
  @Verbatim()
  meta?: Record<string, unknown>;
}
