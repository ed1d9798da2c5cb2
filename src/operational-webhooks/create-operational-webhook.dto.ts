import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { ArrayNotEmpty, IsArray, IsIn } from 'class-validator';
import { IsReceiverUrl } from '../webhooks/create-webhook.dto.js';
import { OPERATIONAL_EVENT_TYPES } from './operational-event.js';

@ApiSchema({ name: 'CreateOperationalWebhook' })
export class CreateOperationalWebhookDto {
  @IsReceiverUrl('https://example.com/hooks/operations')
  url: string;

  @ApiProperty({
    type: 'array',
    items: { type: 'string', enum: [...OPERATIONAL_EVENT_TYPES] },
    minItems: 1,
    description: 'The events it receives; duplicates collapse.',
  })
  @IsArray()
  @ArrayNotEmpty()
  @IsIn(OPERATIONAL_EVENT_TYPES, {
    each: true,
    message: `each value in events must be one of: ${OPERATIONAL_EVENT_TYPES.join(', ')}`,
  })
  events: string[];
}
