import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDate, IsOptional, ValidateBy, type ValidationArguments } from 'class-validator';
import { ApiError } from './api-error.js';

// A full date-time with its time zone: a bare date or a local time would be read in the server's zone.
const ISO_TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/;

const TIMESTAMP_MESSAGE = 'must be an ISO 8601 timestamp with a time zone, e.g. 2024-01-15T10:30:00.000Z';

/** The date an ISO 8601 timestamp (`2024-01-15T10:30:00.000Z`) names, or undefined for anything else. */
function readTimestamp(raw: unknown): Date | undefined {
  const match = typeof raw === 'string' ? ISO_TIMESTAMP.exec(raw) : null;
  if (!match) return undefined;
  const date = new Date(raw as string);
  const [year, month, day] = match.slice(1, 4).map(Number);
  // Date rolls 2024-02-30 over into March; a day the month does not have is refused instead.
  const realDay = new Date(Date.UTC(year, month - 1, day)).getUTCDate() === day && year >= 1;
  return realDay && !Number.isNaN(date.getTime()) ? date : undefined;
}

/** An ISO 8601 timestamp given as `field`; anything else is a 400 naming it. */
export function parseTimestamp(field: string, raw: unknown): Date {
  const date = readTimestamp(raw);
  if (!date) throw ApiError.invalidField(field, TIMESTAMP_MESSAGE);
  return date;
}

/** A time range [since, until): `since` must come first. */
export function assertBefore(since: Date, until: Date): void {
  if (since.getTime() >= until.getTime()) throw ApiError.invalidField('since', 'must be before until');
}

/** An optional query parameter read as parseTimestamp reads it; the handler gets a Date. */
export const TimestampQueryField = (description: string) =>
  applyDecorators(
    ApiPropertyOptional({ type: 'string', format: 'date-time', description }),
    Transform(({ value }) => readTimestamp(value) ?? value),
    IsOptional(),
    IsDate({ message: TIMESTAMP_MESSAGE }),
  );

/** On the `since` field: before the timestamp in `until` when both are valid (the range [since, until)). */
export const IsBeforeUntil = () =>
  ValidateBy(
    {
      name: 'isBeforeUntil',
      validator: {
        validate: (since: unknown, { object }: ValidationArguments) => {
          const { until } = object as { until?: unknown };
          return !(since instanceof Date && until instanceof Date) || since.getTime() < until.getTime();
        },
      },
    },
    { message: 'must be before until' },
  );
