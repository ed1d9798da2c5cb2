import { IsBoolean, IsObject, ValidateIf } from 'class-validator';

export class CreateSubmissionDto {
  @IsObject({ message: 'data must be a JSON object' })
  data: Record<string, unknown>;

  @ValidateIf((o: CreateSubmissionDto) => o.finished !== undefined)
  @IsBoolean()
  finished?: boolean;

  @ValidateIf((o: CreateSubmissionDto) => o.meta !== undefined)
  @IsObject({ message: 'meta must be a JSON object' })
  meta?: Record<string, unknown>;
}
