import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { AUDIT_ACTIONS, AUDIT_ACTOR_TYPES, type AuditEventEntity } from './audit-event.entity.js';

@ApiSchema({ name: 'AuditActor' })
export class AuditActor {
  @ApiProperty({ enum: AUDIT_ACTOR_TYPES, description: 'What made the change' })
  type: string;

  @ApiProperty({ description: "The API key's id (never the key), or the portal link's for a portal session" })
  id: string;
}

@ApiSchema({ name: 'AuditTarget' })
export class AuditTarget {
  @ApiProperty({
    enum: ['webhook', 'delivery', 'recovery', 'operational_webhook', 'portal_link'],
    description: 'What was changed',
  })
  type: string;

  @ApiProperty({ description: 'Its id' })
  id: string;
}

@ApiSchema({ name: 'AuditEvent' })
export class AuditEventResponse {
  @ApiProperty({ description: 'Event identifier (CUID2)' })
  id: string;

  @ApiProperty({ enum: AUDIT_ACTIONS })
  action: string;

  @ApiProperty({ format: 'date-time', description: 'When the change was made; ISO 8601 UTC, with milliseconds' })
  occurredAt: string;

  @ApiProperty({ type: AuditActor })
  actor: AuditActor;

  @ApiProperty({ type: 'string', nullable: true, description: "The request's id (its x-request-id answer header)" })
  requestId: string | null;

  @ApiProperty({ type: AuditTarget })
  target: AuditTarget;

  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description: 'What changed, by field; never a secret',
  })
  changes: Record<string, unknown>;
}

export const serializeAuditEvent = (e: AuditEventEntity): AuditEventResponse => ({
  id: e.id,
  action: e.action,
  occurredAt: e.occurredAt.toISOString(),
  actor: { type: e.actorType, id: e.actorId },
  requestId: e.requestId,
  target: { type: e.targetType, id: e.targetId },
  changes: e.changes,
});
