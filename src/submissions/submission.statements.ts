import { prepared } from '../core/database/prepared.js';
import { filterMatches, submissionDocument } from './submission-filter.js';

/*
 * The submissions' reads (DESIGN 11), SQL so that each is one prepared statement: planned once per
 * connection, and its generic plan reads the index by its keyset whatever the parameters.
 */

const STORED_SUBMISSION = submissionDocument({
  id: 's.id',
  createdAt: 's.created_at',
  updatedAt: 's.updated_at',
  calculatorId: 's.calculator_id',
  finished: 's.finished',
  data: 's.data',
  meta: 's.meta',
});

/**
 * A page of a calculator of the workspace's submissions, newest first by (created_at, id), from
 * submissions_calculator_page_idx. The scan starts at one upper bound, ($3, $4): the cursor's position or
 * (until, ''), whichever comes first (the caller's choice: Postgres cannot tell which of a row comparison
 * and a plain one is tighter, and would start at the cursor and skip every row after `until`); it ends at
 * `since` ($5). No parameter is ever null (an absent bound is ±infinity), so a page reads its rows and no
 * more, however deep. `scanned` is at most $7 submissions; the page is those of them the filter ($6, null
 * for none; an error is no match) matches, at most $8. Parameters: calculator, workspace, upper bound
 * (created_at, id), since, filter, scan limit, page limit. No row: the calculator is not the workspace's.
 * One row with a null id: no submission matched; `scanned`, `last_at` and `last_id` say how far it went.
 */
export const SUBMISSIONS_PAGE = prepared(
  'submissions_page',
  `WITH calc AS (
     SELECT id FROM calculators WHERE id = $1 AND workspace_id = $2 AND removed_at IS NULL
   ), scanned AS (
     SELECT s.id, s.calculator_id, s.finished, s.data, s.meta, s.created_at, s.updated_at,
            ${filterMatches(STORED_SUBMISSION, '$6::jsonpath')} AS matches
     FROM submissions s
     WHERE s.calculator_id = (SELECT id FROM calc)
       AND (s.created_at, s.id) < ($3::timestamptz, $4::varchar) AND s.created_at >= $5::timestamptz
     ORDER BY s.created_at DESC, s.id DESC
     LIMIT $7
   )
   SELECT (SELECT count(*) FROM scanned)::int AS scanned, l.created_at AS last_at, l.id AS last_id,
          m.id, m.calculator_id AS "calculatorId", m.finished, m.data, m.meta, m.created_at AS "createdAt",
          m.updated_at AS "updatedAt"
   FROM calc
   LEFT JOIN LATERAL (SELECT created_at, id FROM scanned ORDER BY created_at, id LIMIT 1) l ON true
   LEFT JOIN LATERAL (SELECT * FROM scanned WHERE matches ORDER BY created_at DESC, id DESC LIMIT $8) m ON true
   ORDER BY m.created_at DESC, m.id DESC`,
);

/** One submission of the workspace, by its key; a removed calculator's are not shown. Parameters: id, workspace. */
export const SUBMISSION_GET = prepared(
  'submission_get',
  `SELECT s.id, s.calculator_id AS "calculatorId", s.finished, s.data, s.meta, s.created_at AS "createdAt",
          s.updated_at AS "updatedAt"
   FROM submissions s JOIN calculators c ON c.id = s.calculator_id AND c.removed_at IS NULL
   WHERE s.id = $1 AND s.workspace_id = $2`,
);
