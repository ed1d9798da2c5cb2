import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { OPERATIONAL_EVENT_TYPES, type OperationalEventType } from './operational-event.js';

const NULLABLE_TIMESTAMP = { type: 'string', format: 'date-time', nullable: true } as const;

/** A row of the operational webhooks' statements (operational-webhook.statements.ts). */
export interface OperationalWebhookRow {
  id: string;
  url: string;
  events: OperationalEventType[];
  createdAt: Date;
  updatedAt: Date;
  lastAttemptAt: Date | null;
  lastSuccessAt: Date | null;
  lastError: string | null;
}

@ApiSchema({ name: 'OperationalWebhook' })
export class OperationalWebhookResponse {
  @ApiProperty({ description: 'Operational webhook identifier (CUID2)' })
  id: string;

  @ApiProperty({ description: 'Destination the events are sent to', example: 'https://example.com/hooks/operations' })
  url: string;

  @ApiProperty({ type: 'array', items: { type: 'string', enum: [...OPERATIONAL_EVENT_TYPES] }, minItems: 1 })
  events: string[];

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  @ApiProperty({ format: 'date-time' })
  updatedAt: string;

  @ApiProperty({ ...NULLABLE_TIMESTAMP, description: 'When an event was last attempted' })
  lastAttemptAt: string | null;

  @ApiProperty({ ...NULLABLE_TIMESTAMP, description: 'When an attempt last got a 2xx' })
  lastSuccessAt: string | null;

  @ApiProperty({ type: 'string', nullable: true, description: 'The error of the last failed attempt' })
  lastError: string | null;
}

@ApiSchema({ name: 'CreatedOperationalWebhook' })
export class CreatedOperationalWebhookResponse extends OperationalWebhookResponse {
  @ApiProperty({
    description: 'The signing secret (Standard Webhooks, `whsec_...`): shown here only, keep it',
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  })
  secret: string;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export const serializeOperationalWebhook = (w: OperationalWebhookRow): OperationalWebhookResponse => ({
  id: w.id,
  url: w.url,
  events: OPERATIONAL_EVENT_TYPES.filter((type) => w.events.includes(type)),
  createdAt: w.createdAt.toISOString(),
  updatedAt: w.updatedAt.toISOString(),
  lastAttemptAt: iso(w.lastAttemptAt),
  lastSuccessAt: iso(w.lastSuccessAt),
  lastError: w.lastError,
});
