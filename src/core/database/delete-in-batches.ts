import type { EntityManager } from 'typeorm';

// At most this many rows per statement, so a purge never holds many row locks at once.
const BATCH = 1000;

/**
 * Deletes the rows of `table` where `column < before`, a batch per statement, until none is left or
 * `signal` is aborted; returns how many. SKIP LOCKED: a row being changed now waits for the next run.
 */
export async function deleteOlderThan(
  db: Pick<EntityManager, 'query'>,
  { table, column, before }: { table: string; column: string; before: Date },
  signal?: AbortSignal,
): Promise<number> {
  let deleted = 0;
  while (!signal?.aborted) {
    const [, count] = (await db.query(
      `DELETE FROM ${table} WHERE id IN (SELECT id FROM ${table} WHERE ${column} < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
      [before, BATCH],
    )) as [unknown, number];
    deleted += count;
    if (count < BATCH) break;
  }
  return deleted;
}
