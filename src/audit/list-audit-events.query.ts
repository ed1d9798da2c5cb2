import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional } from 'class-validator';
import { CursorQueryField } from '../core/http/cursor-query.js';
import { DEFAULT_LIMIT, LimitQueryField } from '../core/http/paging.js';
import { IsBeforeUntil, TimestampQueryField } from '../core/http/timestamps.js';
import { AUDIT_ACTIONS, type AuditAction } from './audit-event.entity.js';

/** GET /audit-events: filters, a page size and the position after the previous page; other parameters are ignored. */
export class ListAuditEventsQuery {
  @ApiPropertyOptional({ enum: AUDIT_ACTIONS, description: 'Only events of this action' })
  @IsOptional()
  @IsIn(AUDIT_ACTIONS, { message: `must be one of: ${AUDIT_ACTIONS.join(', ')}` })
  action?: AuditAction;

  @TimestampQueryField('Only events at or after this time')
  @IsBeforeUntil()
  since?: Date;

  @TimestampQueryField('Only events before this time')
  until?: Date;

  @LimitQueryField('events')
  limit: number = DEFAULT_LIMIT;

  @CursorQueryField()
  cursor?: string;
}
