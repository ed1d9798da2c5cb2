import { LimitQueryField, OffsetQueryField, DEFAULT_LIMIT } from '../core/http/paging.js';

/** GET /calculators (DESIGN 3); other parameters are ignored, as on every list. */
export class ListCalculatorsQuery {
  @LimitQueryField()
  limit: number = DEFAULT_LIMIT;

  @OffsetQueryField()
  offset: number = 0;
}
