import { ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsInt, Max, Min, ValidateIf } from 'class-validator';

export const MAX_OVERLAP_SECONDS = 604_800; // 7 days
export const DEFAULT_OVERLAP_SECONDS = 86_400;

@ApiSchema({ name: 'RotateWebhookSecret' })
export class RotateSecretDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: MAX_OVERLAP_SECONDS,
    default: DEFAULT_OVERLAP_SECONDS,
    description: 'Seconds during which attempts are signed with the previous key too; 0 = no overlap',
  })
  // Present means not null: sent as null is an error, not the default.
  @ValidateIf((o: RotateSecretDto) => o.overlapSeconds !== undefined)
  @IsInt()
  @Min(0)
  @Max(MAX_OVERLAP_SECONDS)
  overlapSeconds?: number;
}
