import { ApiProperty, ApiSchema, getSchemaPath } from '@nestjs/swagger';
import { DISABLED_REASONS } from '../webhooks/webhook.entity.js';

/* The OpenAPI schemas of the operational events (operational-event.ts), for the document's `webhooks`. */

const TIMESTAMP = { format: 'date-time', description: 'ISO 8601 UTC, with milliseconds' } as const;

@ApiSchema({ name: 'OperationalEventWebhook', description: 'The webhook the event is about' })
export class EventWebhookSchema {
  @ApiProperty()
  id: string;

  @ApiProperty()
  name: string;

  @ApiProperty()
  url: string;
}

@ApiSchema({ name: 'WebhookDisabledEventData' })
export class WebhookDisabledData {
  @ApiProperty({ type: EventWebhookSchema })
  webhook: EventWebhookSchema;

  @ApiProperty({ enum: DISABLED_REASONS, description: 'manual (POST .../disable), gone (a 410), failing' })
  reason: string;

  @ApiProperty({ type: 'string', nullable: true, description: 'The error of its last failed attempt' })
  lastError: string | null;

  @ApiProperty(TIMESTAMP)
  disabledAt: string;
}

@ApiSchema({ name: 'WebhookEnabledEventData' })
export class WebhookEnabledData {
  @ApiProperty({ type: EventWebhookSchema })
  webhook: EventWebhookSchema;

  @ApiProperty(TIMESTAMP)
  enabledAt: string;
}

@ApiSchema({ name: 'FailedDeliveryLastAttempt' })
export class AttemptSummarySchema {
  @ApiProperty({ type: 'integer', minimum: 1 })
  attemptNumber: number;

  @ApiProperty(TIMESTAMP)
  startedAt: string;

  @ApiProperty({ type: 'integer', minimum: 0 })
  durationMs: number;

  @ApiProperty({ type: 'integer', nullable: true })
  statusCode: number | null;

  @ApiProperty({ type: 'string', nullable: true, description: 'The first 2 KiB of the response body' })
  responseBody: string | null;

  @ApiProperty({ type: 'string', nullable: true })
  error: string | null;
}

@ApiSchema({ name: 'DeliveryFailedEventData' })
export class DeliveryFailedData {
  @ApiProperty({ description: 'The delivery (GET /deliveries/{deliveryId})' })
  deliveryId: string;

  @ApiProperty({ type: EventWebhookSchema })
  webhook: EventWebhookSchema;

  @ApiProperty({ type: AttemptSummarySchema, nullable: true })
  lastAttempt: AttemptSummarySchema | null;

  // By name: the delivery log's schemas refer to these, so a class import would be a cycle.
  @ApiProperty({ allOf: [{ $ref: getSchemaPath('DeliveryPayload') }], description: 'The body the webhook was sent' })
  payload: unknown;
}

@ApiSchema({ name: 'RecoveryCompletedEventData' })
export class RecoveryCompletedData {
  @ApiProperty()
  recoveryId: string;

  @ApiProperty()
  webhookId: string;

  @ApiProperty(TIMESTAMP)
  since: string;

  @ApiProperty(TIMESTAMP)
  until: string;

  @ApiProperty({ type: 'integer', minimum: 0 })
  matched: number;

  @ApiProperty({ type: 'integer', minimum: 0 })
  requeued: number;

  @ApiProperty(TIMESTAMP)
  completedAt: string;
}

/** One schema per event: `{ type, timestamp, data }` with its own `type` and `data`. */
const eventSchema = (name: string, type: string, data: new () => unknown, description: string) => {
  @ApiSchema({ name, description })
  class Event {
    @ApiProperty({ enum: [type] })
    type: string;

    @ApiProperty({ ...TIMESTAMP, description: 'When the event happened' })
    timestamp: string;

    @ApiProperty({ type: data })
    data: unknown;
  }
  return Event;
};

export const OPERATIONAL_EVENT_SCHEMAS = {
  'webhook.disabled': eventSchema(
    'WebhookDisabledEvent',
    'webhook.disabled',
    WebhookDisabledData,
    'A webhook was disabled: by hand, after a 410, or by the health rules (consecutive failures).',
  ),
  'webhook.enabled': eventSchema(
    'WebhookEnabledEvent',
    'webhook.enabled',
    WebhookEnabledData,
    'A disabled webhook was enabled.',
  ),
  'delivery.failed': eventSchema(
    'DeliveryFailedEvent',
    'delivery.failed',
    DeliveryFailedData,
    'A delivery ended failed: its retry schedule exhausted, a 410, or a refusal by the SSRF guard.',
  ),
  'recovery.completed': eventSchema(
    'RecoveryCompletedEvent',
    'recovery.completed',
    RecoveryCompletedData,
    'A recovery requeued every delivery it matched.',
  ),
};
