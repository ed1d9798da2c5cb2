import { ApiError } from './api-error.js';

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 100;
const INT32_MAX = 2_147_483_647;

function parseNonNegativeInt(field: string, raw: unknown): number | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !/^\d+$/.test(raw)) {
    throw ApiError.invalidField(field, 'must be a non-negative integer');
  }
  return Number(raw);
}

/** `limit` 1..100, default 50, larger values clamped (every list reads it so). */
export function parseLimit(raw: unknown): number {
  const limit = parseNonNegativeInt('limit', raw);
  if (limit === 0) throw ApiError.invalidField('limit', 'must be at least 1');
  return Math.min(limit ?? DEFAULT_LIMIT, MAX_LIMIT);
}

/** List paging: `limit` as parseLimit reads it, `offset` 0..int32 max (default 0). */
export function parsePaging(query: Record<string, unknown>): { limit: number; offset: number } {
  const limit = parseLimit(query.limit);
  const offset = parseNonNegativeInt('offset', query.offset);
  if (offset !== undefined && offset > INT32_MAX) throw ApiError.invalidField('offset', 'must fit in a 32-bit integer');
  return { limit, offset: offset ?? 0 };
}
