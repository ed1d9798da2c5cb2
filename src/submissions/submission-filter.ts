import { ApiError } from '../core/http/api-error.js';

/**
 * A webhook's filter (DESIGN 11): an SQL/JSON path predicate over the Submission, evaluated by Postgres's
 * jsonb_path_match in silent mode, where an error (a type mismatch, a missing key in strict mode) yields
 * NULL, which counts as no match. Postgres parses it, so what is accepted is exactly what Postgres runs.
 */

export const MAX_FILTER_LENGTH = 1000;

export const FILTER_EXAMPLE = '$.finished == true && $.data.loanAmount > 100000';

/**
 * An error Postgres raised about the filter itself: a data exception (class 22) or a syntax or
 * undefined-object error (class 42). Others (a lost connection, a timeout) are not the caller's to fix.
 */
const isFilterError = (error: unknown): error is Error =>
  error instanceof Error && /^(22|42)[0-9A-Z]{3}$/.test(String((error as { code?: unknown }).code));

/**
 * The SQL expression of the Submission as the newSubmission payload's `data` carries it, from SQL
 * expressions of its parts (columns or parameters). Timestamps as the payload writes them, ISO 8601 UTC
 * with milliseconds, a fixed width: a predicate compares `$.createdAt` with such a string in time order
 * (`$.createdAt >= "2024-01-15T00:00:00.000Z"`); jsonb_path_match's datetime() cannot compare time zones.
 */
export function submissionDocument(p: {
  id: string;
  createdAt: string;
  updatedAt: string;
  calculatorId: string;
  finished: string;
  data: string;
  meta: string;
}): string {
  const iso = (at: string) => `to_char(${at} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  return `jsonb_build_object('id', ${p.id}, 'createdAt', ${iso(p.createdAt)}, 'updatedAt', ${iso(p.updatedAt)},
    'calculatorId', ${p.calculatorId}, 'finished', ${p.finished}, 'data', ${p.data}, 'meta', ${p.meta})`;
}

/** Whether a submission document (SQL) matches a filter (SQL, jsonpath or null): an error is no match. */
export const filterMatches = (document: string, filter: string): string =>
  `(${filter} IS NULL OR coalesce(jsonb_path_match(${document}, ${filter}, '{}', true), false))`;

/** What can run SQL: a DataSource, an EntityManager or a QueryRunner. */
interface Queryable {
  query(sql: string, parameters?: unknown[]): Promise<unknown>;
}

/**
 * A 400 naming `field` unless `filter` is a predicate Postgres accepts. Parsed by the jsonpath cast; then
 * run on an empty object without silent mode: a predicate yields true, false or unknown there, while a
 * path (`$.finished`), a filter expression (`$ ? (...)`) or a value yields no single boolean, and a
 * variable is unknown, so each errors. Postgres's message says why (it holds no SQL, only the filter).
 */
export async function assertFilter(db: Queryable, field: string, filter: string): Promise<void> {
  if (filter.length > MAX_FILTER_LENGTH) {
    throw ApiError.invalidField(field, `${field} must be at most ${MAX_FILTER_LENGTH} characters`);
  }
  // Postgres text cannot hold NUL (a body's strings are checked already; a query string's are not).
  if (filter.includes('\u0000')) throw ApiError.invalidField(field, `${field} must not contain a NUL character`);
  try {
    await db.query('SELECT $1::jsonpath', [filter]);
  } catch (error) {
    if (!isFilterError(error)) throw error;
    throw ApiError.invalidField(field, `${field} is not an SQL/JSON path: ${error.message}`);
  }
  try {
    await db.query(`SELECT jsonb_path_match('{}', $1::jsonpath)`, [filter]);
  } catch (error) {
    if (!isFilterError(error)) throw error;
    throw ApiError.invalidField(
      field,
      `${field} must be a predicate, a check that is true or false, e.g. ${FILTER_EXAMPLE} (${error.message})`,
    );
  }
}
