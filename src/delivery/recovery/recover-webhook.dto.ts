import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsBoolean, IsString, ValidateIf } from 'class-validator';

/** POST /webhooks/{id}/recover (DESIGN 7.3); the timestamps are read by parseTimestamp in the service. */
@ApiSchema({ name: 'RecoverWebhook' })
export class RecoverWebhookDto {
  @ApiProperty({
    format: 'date-time',
    description: 'Deliveries created at or after this time; not older than the delivery retention',
  })
  @IsString()
  since: string;

  @ApiPropertyOptional({
    format: 'date-time',
    description: 'Deliveries created before this time; default (and at most) now',
  })
  @ValidateIf((o: RecoverWebhookDto) => o.until !== undefined)
  @IsString()
  until?: string;

  @ApiPropertyOptional({ default: false, description: 'Only count the deliveries that would be sent again' })
  @ValidateIf((o: RecoverWebhookDto) => o.dryRun !== undefined)
  @IsBoolean()
  dryRun?: boolean;
}
