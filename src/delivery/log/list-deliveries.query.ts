import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, Matches, ValidateBy } from 'class-validator';
import { DEFAULT_LIMIT, LimitQueryField, OffsetQueryField } from '../../core/http/paging.js';
import { IsBeforeUntil, TimestampQueryField } from '../../core/http/timestamps.js';
import { isCuid2 } from '../../core/ids.js';
import { CursorQueryField } from '../../core/http/cursor-query.js';
import type { LogPosition } from '../../core/http/log-cursor.js';
import { DELIVERY_STATUSES, type DeliveryStatus } from '../delivery.entity.js';

/** A status code (100-599) or a class (`5xx`). */
const STATUS_CODE_PATTERN = /^[1-5](\d\d|xx)$/;

const StatusQueryField = () =>
  applyDecorators(
    ApiPropertyOptional({ enum: DELIVERY_STATUSES }),
    IsOptional(),
    IsIn(DELIVERY_STATUSES, { message: `must be one of: ${DELIVERY_STATUSES.join(', ')}` }),
  );

const IdQueryField = (description: string) =>
  applyDecorators(
    ApiPropertyOptional({ type: 'string', description }),
    IsOptional(),
    ValidateBy({ name: 'isCuid2', validator: { validate: isCuid2 } }, { message: 'must be an id (CUID2)' }),
  );

/** GET /webhooks/{id}/deliveries: offset paging as on GET /calculators, and a status filter. */
export class ListWebhookDeliveriesQuery {
  @LimitQueryField()
  limit: number = DEFAULT_LIMIT;

  @OffsetQueryField()
  offset: number = 0;

  @StatusQueryField()
  status?: DeliveryStatus;
}

/**
 * GET /deliveries: filters on the workspace's log, a page size and the position after the previous page;
 * other parameters are ignored. Field order is the order errors are reported in; decodeCursor checks
 * the cursor's workspace after all of them.
 */
export class ListDeliveriesQuery {
  @TimestampQueryField('Only deliveries created at or after this time')
  @IsBeforeUntil()
  since?: Date;

  @TimestampQueryField('Only deliveries created before this time')
  until?: Date;

  @StatusQueryField()
  status?: DeliveryStatus;

  @IdQueryField("Only this webhook's deliveries")
  webhookId?: string;

  @IdQueryField("Only deliveries of this calculator's submissions")
  calculatorId?: string;

  @IdQueryField("Only this submission's deliveries")
  submissionId?: string;

  @ApiPropertyOptional({
    type: 'string',
    pattern: STATUS_CODE_PATTERN.source,
    description:
      'Only deliveries whose last answer had this HTTP status code (`500`) or class (`5xx`, `4xx`, `3xx`, `2xx`, ' +
      '`1xx`); deliveries that never got an answer (timeouts, refused connections) have none',
    example: '5xx',
  })
  @IsOptional()
  @Matches(STATUS_CODE_PATTERN, { message: 'must be an HTTP status code (100-599) or a class such as 5xx' })
  statusCode?: string;

  @LimitQueryField('deliveries')
  limit: number = DEFAULT_LIMIT;

  @CursorQueryField()
  cursor?: string;
}

/** What DeliveryLogService.listWorkspace reads: the query with its cursor decoded. */
export type WorkspaceLogFilter = Omit<ListDeliveriesQuery, 'cursor'> & { after?: LogPosition };
