import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength } from 'class-validator';
import { CursorQueryField } from '../core/http/cursor-query.js';
import { LimitQueryField } from '../core/http/paging.js';
import { IsBeforeUntil, TimestampQueryField } from '../core/http/timestamps.js';
import { FILTER_EXAMPLE, MAX_FILTER_LENGTH } from './submission-filter.js';

const DEFAULT_SUBMISSIONS_LIMIT = 10;
/** How many submissions a page with a filter looks at, at most. */
export const FILTERED_PAGE_SCAN = 1000;

/**
 * GET /calculators/{id}/submissions (DESIGN 11): a time range, a filter to test, a page size and the
 * position after the previous page; other parameters are ignored. Field order is the order errors are
 * reported in.
 */
export class ListSubmissionsQuery {
  @TimestampQueryField('Only submissions created at or after this time')
  @IsBeforeUntil()
  since?: Date;

  @TimestampQueryField('Only submissions created before this time')
  until?: Date;

  @ApiPropertyOptional({
    type: 'string',
    maxLength: MAX_FILTER_LENGTH,
    description:
      "Only the submissions this SQL/JSON path predicate matches, as a webhook's `filter` would: the way to " +
      `test one before saving it. A page with a filter looks at up to ${FILTERED_PAGE_SCAN} submissions, so it may hold ` +
      'fewer than `limit` (even none) while `nextCursor` leads further back.',
    example: FILTER_EXAMPLE,
  })
  @IsOptional()
  // Checked bottom-up: a value that is no string is told so, not how long it may be.
  @MaxLength(MAX_FILTER_LENGTH)
  @IsString()
  filter?: string;

  @LimitQueryField('submissions', DEFAULT_SUBMISSIONS_LIMIT)
  limit: number = DEFAULT_SUBMISSIONS_LIMIT;

  @CursorQueryField()
  cursor?: string;
}
