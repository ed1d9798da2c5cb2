import { parseLimit } from '../../core/http/paging.js';
import { ApiError } from '../../core/http/api-error.js';
import { assertBefore, parseTimestamp } from '../../core/http/timestamps.js';
import { isCuid2 } from '../../core/ids.js';
import { decodeCursor, type LogPosition } from './delivery-cursor.js';
import { DELIVERY_STATUSES, type DeliveryStatus } from '../delivery.entity.js';

/** GET /webhooks/{id}/deliveries: a status filter and offset paging. */
export interface DeliveryFilter {
  status?: DeliveryStatus;
  limit: number;
  offset: number;
}

export function parseStatusFilter(raw: unknown): DeliveryStatus | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !(DELIVERY_STATUSES as readonly string[]).includes(raw)) {
    throw ApiError.invalidField('status', `must be one of: ${DELIVERY_STATUSES.join(', ')}`);
  }
  return raw as DeliveryStatus;
}

/** GET /deliveries: filters on the workspace's log, a page size and the position after the previous page. */
export interface WorkspaceLogFilter {
  status?: DeliveryStatus;
  webhookId?: string;
  calculatorId?: string;
  since?: Date;
  until?: Date;
  limit: number;
  after?: LogPosition;
}

function parseIdFilter(field: string, raw: unknown): string | undefined {
  if (raw === undefined) return undefined;
  if (!isCuid2(raw)) throw ApiError.invalidField(field, 'must be an id (CUID2)');
  return raw;
}

const optionalTimestamp = (field: string, raw: unknown): Date | undefined =>
  raw === undefined ? undefined : parseTimestamp(field, raw);

/** Reads the query of GET /deliveries; other parameters are ignored, as on every list. */
export function parseWorkspaceLogQuery(workspaceId: string, query: Record<string, unknown>): WorkspaceLogFilter {
  const since = optionalTimestamp('since', query.since);
  const until = optionalTimestamp('until', query.until);
  if (since && until) assertBefore(since, until);
  return {
    status: parseStatusFilter(query.status),
    webhookId: parseIdFilter('webhookId', query.webhookId),
    calculatorId: parseIdFilter('calculatorId', query.calculatorId),
    since,
    until,
    limit: parseLimit(query.limit),
    after: decodeCursor(workspaceId, query.cursor),
  };
}
