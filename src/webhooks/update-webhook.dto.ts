import { ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import {
  IsIn,
  IsInt,
  IsString,
  Max,
  MaxLength,
  Min,
  Validate,
  ValidateIf,
  type ValidationArguments,
  ValidatorConstraint,
  type ValidatorConstraintInterface,
} from 'class-validator';
import { RETRY_SCHEDULES, type RetryScheduleName } from '../delivery/retry-schedule.js';
import { FILTER_EXAMPLE, MAX_FILTER_LENGTH } from '../submissions/submission-filter.js';
import { Verbatim } from '../core/http/validation.js';
import { NoControlCharactersConstraint } from './create-webhook.dto.js';
import { headerProblem, MAX_CUSTOM_HEADERS, MAX_HEADER_VALUE_LENGTH } from './webhook-headers.js';

export const TIMEOUT_RANGE_MS = { min: 1000, max: 30_000 } as const;
export const MAX_IN_FLIGHT_RANGE = { min: 1, max: 100 } as const;

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The first problem of a headers patch; names compare case-insensitively. */
export function headersPatchProblem(value: unknown): string | null {
  if (!isPlainObject(value)) return 'headers must be an object of header name to value (null removes one), or null';
  const names = Object.keys(value);
  if (names.length > MAX_CUSTOM_HEADERS) return `headers may hold at most ${MAX_CUSTOM_HEADERS} headers`;
  const seen = new Set<string>();
  for (const name of names) {
    const problem = headerProblem(name, value[name]);
    if (problem) return problem;
    if (seen.has(name.toLowerCase())) return `header ${name} is given twice (names are case-insensitive)`;
    seen.add(name.toLowerCase());
  }
  return null;
}

@ValidatorConstraint({ name: 'headersPatch' })
class HeadersPatchConstraint implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return headersPatchProblem(value) === null;
  }

  defaultMessage(args: ValidationArguments): string {
    return headersPatchProblem(args.value) ?? 'headers are invalid';
  }
}

/** Sent means not undefined; null is the field's reset where `nullable` (validated no further). */
const whenGiven = (property: string, nullable: boolean) =>
  ValidateIf((o: Record<string, unknown>) => o[property] !== undefined && !(nullable && o[property] === null));

/** PATCH /webhooks/{id} (DESIGN 10): any of these; `url` and `calculators` stay as registered. */
@ApiSchema({ name: 'UpdateWebhookSettings' })
export class UpdateWebhookDto {
  @ApiPropertyOptional({ maxLength: 255, description: 'Name for the webhook' })
  @whenGiven('name', false)
  @IsString()
  @MaxLength(255)
  @Validate(NoControlCharactersConstraint)
  name?: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: ['string', 'null'], minLength: 1, maxLength: MAX_HEADER_VALUE_LENGTH },
    maxProperties: MAX_CUSTOM_HEADERS,
    nullable: true,
    description:
      'Custom request headers sent with every attempt (e.g. an `Authorization` the receiver demands), as a merge ' +
      'patch: a string sets a header, null removes it, headers not named stay; `headers: null` removes them all. ' +
      `At most ${MAX_CUSTOM_HEADERS} in all. Names are case-insensitive (kept in lower case); \`content-type\`, ` +
      '`user-agent`, `webhook-*`, `host`, `content-length`, `content-encoding`, `expect` and hop-by-hop headers ' +
      'are refused. Values: printable ASCII, never shown in full again nor logged.',
    example: { Authorization: 'Bearer 7f3c9e1ab2d44c0f' },
  })
  @whenGiven('headers', true)
  @Validate(HeadersPatchConstraint)
  // As parsed: a header may be named like an Object.prototype key, which class-transformer's copy drops.
  @Verbatim()
  headers?: Record<string, string | null> | null;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: TIMEOUT_RANGE_MS.min,
    maximum: TIMEOUT_RANGE_MS.max,
    nullable: true,
    description:
      'Time limit of an attempt, from writing the request to the end of the answer; null: the service default',
  })
  @whenGiven('timeoutMs', true)
  @IsInt()
  @Min(TIMEOUT_RANGE_MS.min)
  @Max(TIMEOUT_RANGE_MS.max)
  timeoutMs?: number | null;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: MAX_IN_FLIGHT_RANGE.min,
    maximum: MAX_IN_FLIGHT_RANGE.max,
    nullable: true,
    description: 'Attempts of this webhook in flight at once, across all workers; null: the service default',
  })
  @whenGiven('maxInFlight', true)
  @IsInt()
  @Min(MAX_IN_FLIGHT_RANGE.min)
  @Max(MAX_IN_FLIGHT_RANGE.max)
  maxInFlight?: number | null;

  @ApiPropertyOptional({
    enum: RETRY_SCHEDULES,
    nullable: true,
    description:
      'standard: 8 attempts over about 27.5 h; short: 5 attempts within an hour; none: one attempt, no retry. ' +
      'null: standard. Applies to pending deliveries from their next failure on.',
  })
  @whenGiven('retrySchedule', true)
  @IsString()
  @IsIn(RETRY_SCHEDULES, { message: `retrySchedule must be one of: ${RETRY_SCHEDULES.join(', ')}` })
  retrySchedule?: RetryScheduleName | null;

  @ApiPropertyOptional({
    type: 'string',
    maxLength: MAX_FILTER_LENGTH,
    nullable: true,
    description:
      "An SQL/JSON path predicate over the Submission (the `newSubmission` payload's `data`), evaluated by " +
      "Postgres's jsonb_path_match when a submission is stored: one that does not match (or on which the " +
      'predicate errors, e.g. a type mismatch) makes no delivery for this webhook. Timestamps are ISO 8601 ' +
      'UTC strings, compared as such. null removes the filter. Test one first with GET ' +
      '/calculators/{calculatorId}/submissions?filter=. Test events ignore it.',
    example: FILTER_EXAMPLE,
  })
  @whenGiven('filter', true)
  // Checked bottom-up: a value that is no string is told so, not how long it may be.
  @MaxLength(MAX_FILTER_LENGTH)
  @IsString()
  filter?: string | null;
}
