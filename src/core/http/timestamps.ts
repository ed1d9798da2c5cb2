import { ApiError } from './api-error.js';

// A full date-time with its time zone: a bare date or a local time would be read in the server's zone.
const ISO_TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/;

/** An ISO 8601 timestamp (`2024-01-15T10:30:00.000Z`) given as `field`; anything else is a 400 naming it. */
export function parseTimestamp(field: string, raw: unknown): Date {
  const match = typeof raw === 'string' ? ISO_TIMESTAMP.exec(raw) : null;
  const date = match ? new Date(raw as string) : null;
  const [year, month, day] = (match ?? []).slice(1, 4).map(Number);
  // Date rolls 2024-02-30 over into March; a day the month does not have is refused instead.
  const realDay = match && new Date(Date.UTC(year, month - 1, day)).getUTCDate() === day && year >= 1;
  if (!date || !realDay || Number.isNaN(date.getTime())) {
    throw ApiError.invalidField(field, 'must be an ISO 8601 timestamp with a time zone, e.g. 2024-01-15T10:30:00.000Z');
  }
  return date;
}

/** A time range [since, until): `since` must come first. */
export function assertBefore(since: Date, until: Date): void {
  if (since.getTime() >= until.getTime()) throw ApiError.invalidField('since', 'must be before until');
}
