import { ApiExtraModels, ApiProperty, ApiSchema, getSchemaPath } from '@nestjs/swagger';
import { OPERATIONAL_EVENT_TYPES } from '../../operational-webhooks/operational-event.js';
import { OPERATIONAL_EVENT_SCHEMAS } from '../../operational-webhooks/operational-event.response.js';
import { SubmissionResponse } from '../../submissions/submission.response.js';
import { TRIGGER_TYPES } from '../../webhooks/webhook-sources.js';
import { DELIVERY_STATUSES, type DeliveryAttemptEntity, type DeliveryEntity } from '../delivery.entity.js';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

const NULLABLE_TIMESTAMP = { type: 'string', format: 'date-time', nullable: true } as const;

@ApiSchema({ name: 'Delivery' })
export class DeliveryResponse {
  @ApiProperty()
  id: string;

  @ApiProperty()
  webhookId: string;

  @ApiProperty({
    type: 'string',
    nullable: true,
    description:
      'The submission delivered; null for a test event (its sample submission is not stored) and an operational event.',
  })
  submissionId: string | null;

  @ApiProperty({
    enum: [...TRIGGER_TYPES, ...OPERATIONAL_EVENT_TYPES],
    description: 'newSubmission, or the operational event an operational webhook was sent',
  })
  event: string;

  @ApiProperty({ enum: DELIVERY_STATUSES })
  status: string;

  @ApiProperty({ type: 'integer', minimum: 0 })
  attemptCount: number;

  @ApiProperty({ type: 'integer', minimum: 0, description: 'Attempts allowed in all; a manual retry raises it by one' })
  maxAttempts: number;

  @ApiProperty(NULLABLE_TIMESTAMP)
  nextAttemptAt: string | null;

  @ApiProperty(NULLABLE_TIMESTAMP)
  lastAttemptAt: string | null;

  @ApiProperty({ type: 'integer', nullable: true, description: 'HTTP status of the last attempt, if it got one' })
  lastStatusCode: number | null;

  @ApiProperty({ type: 'string', nullable: true })
  lastError: string | null;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  @ApiProperty({ format: 'date-time' })
  updatedAt: string;

  @ApiProperty(NULLABLE_TIMESTAMP)
  completedAt: string | null;
}

@ApiSchema({ name: 'DeliveryAttempt' })
export class DeliveryAttemptResponse {
  @ApiProperty({ type: 'integer', minimum: 1 })
  attemptNumber: number;

  @ApiProperty({ enum: ['scheduled', 'manual'] })
  trigger: string;

  @ApiProperty({ format: 'date-time' })
  startedAt: string;

  @ApiProperty({ type: 'integer', minimum: 0 })
  durationMs: number;

  @ApiProperty({ type: 'integer', nullable: true })
  statusCode: number | null;

  @ApiProperty()
  succeeded: boolean;

  @ApiProperty({
    type: 'string',
    nullable: true,
    description:
      'The first 2 KiB of the response body that arrived (whole UTF-8 characters), on every outcome: a failed ' +
      'attempt keeps it too (a body over 64 KiB, or one cut by the timeout). Null when no answer arrived.',
  })
  responseBody: string | null;

  @ApiProperty({ type: 'string', nullable: true })
  error: string | null;
}

/** The body POSTed to the webhook's url (delivery-payload.ts). */
@ApiSchema({ name: 'DeliveryPayload' })
export class DeliveryPayload {
  @ApiProperty()
  webhookId: string;

  @ApiProperty({ enum: TRIGGER_TYPES })
  event: string;

  @ApiProperty({ type: SubmissionResponse })
  data: SubmissionResponse;
}

const PAYLOADS = [DeliveryPayload, ...Object.values(OPERATIONAL_EVENT_SCHEMAS)];

@ApiSchema({ name: 'DeliveryDetail' })
@ApiExtraModels(...PAYLOADS)
export class DeliveryDetailResponse extends DeliveryResponse {
  @ApiProperty({
    oneOf: PAYLOADS.map((schema) => ({ $ref: getSchemaPath(schema) })),
    description: 'The body sent: a submission, or an operational event (to an operational webhook)',
  })
  payload: unknown;

  @ApiProperty({ type: [DeliveryAttemptResponse] })
  attempts: DeliveryAttemptResponse[];
}

export const serializeDelivery = (d: DeliveryEntity): DeliveryResponse => ({
  id: d.id,
  webhookId: d.webhookId,
  submissionId: d.submissionId,
  event: typeof d.event?.type === 'string' ? d.event.type : 'newSubmission',
  status: d.status,
  attemptCount: d.attemptCount,
  maxAttempts: d.maxAttempts,
  nextAttemptAt: iso(d.nextAttemptAt),
  lastAttemptAt: iso(d.lastAttemptAt),
  lastStatusCode: d.lastStatusCode,
  lastError: d.lastError,
  createdAt: d.createdAt.toISOString(),
  updatedAt: d.updatedAt.toISOString(),
  completedAt: iso(d.completedAt),
});

const serializeAttempt = (a: DeliveryAttemptEntity): DeliveryAttemptResponse => ({
  attemptNumber: a.attemptNumber,
  trigger: a.trigger,
  startedAt: a.startedAt.toISOString(),
  durationMs: a.durationMs,
  statusCode: a.statusCode,
  succeeded: a.succeeded,
  responseBody: a.responseBody,
  error: a.error,
});

/** GET of one delivery, by webhook or workspace-wide: the delivery, its payload and its attempts. */
export const serializeDeliveryDetail = (detail: {
  delivery: DeliveryEntity;
  attempts: DeliveryAttemptEntity[];
  payload: unknown;
}): DeliveryDetailResponse => ({
  ...serializeDelivery(detail.delivery),
  payload: detail.payload,
  attempts: detail.attempts.map(serializeAttempt),
});
