import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 100;
const INT32_MAX = 2_147_483_647;
const NOT_AN_INTEGER = 'must be a non-negative integer';

/**
 * Digits only (no sign, point, exponent or space) become a number, anything else stays as given for
 * IsInt to refuse. Saturated at 2^53 - 1, so digits past a double's range are too large, not Infinity.
 */
const readDigits = (value: unknown): unknown =>
  typeof value === 'string' && /^\d+$/.test(value) ? Math.min(Number(value), Number.MAX_SAFE_INTEGER) : value;

/**
 * `limit` on every list: 1..100, default 50 (`fallback` where a list says otherwise; the field's initializer
 * must match), larger values clamped (the handler reads the clamped value).
 */
export const LimitQueryField = (items = 'items', fallback = DEFAULT_LIMIT) =>
  applyDecorators(
    ApiPropertyOptional({
      type: 'integer',
      format: 'int32',
      minimum: 1,
      default: fallback,
      description: `Maximum number of ${items} to return; default ${fallback}, larger values are clamped to ${MAX_LIMIT}`,
    }),
    Transform(({ value }) => {
      const limit = readDigits(value);
      return typeof limit === 'number' ? Math.min(limit, MAX_LIMIT) : limit;
    }),
    IsOptional(),
    IsInt({ message: NOT_AN_INTEGER }),
    Min(1, { message: 'must be at least 1' }),
  );

/** `offset` of the offset-paged lists: 0..int32 max, default 0. */
export const OffsetQueryField = () =>
  applyDecorators(
    ApiPropertyOptional({
      type: 'integer',
      format: 'int32',
      minimum: 0,
      default: 0,
      description: 'Number of items to skip before results start',
    }),
    Transform(({ value }) => readDigits(value)),
    IsOptional(),
    IsInt({ message: NOT_AN_INTEGER }),
    Max(INT32_MAX, { message: 'must fit in a 32-bit integer' }),
  );
