import { CursorQueryField } from '../core/http/cursor-query.js';
import { DEFAULT_LIMIT, LimitQueryField } from '../core/http/paging.js';

/** GET /portal-links: a page size and the position after the previous page; other parameters are ignored. */
export class ListPortalLinksQuery {
  @LimitQueryField('links')
  limit: number = DEFAULT_LIMIT;

  @CursorQueryField()
  cursor?: string;
}
