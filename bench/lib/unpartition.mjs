/**
 * Rebuilds `deliveries` and `delivery_attempts` as plain tables with the same columns, indexes and
 * constraints (the store's functions find them by name), for measuring what partitioning costs
 * (scripts/partition-cost.mjs; `BENCH_UNPARTITIONED=1 npm run bench`). Rows are not kept.
 */
export async function unpartition(client) {
  await client.query('BEGIN');
  try {
    await client.query(`CREATE TABLE deliveries_plain (LIKE deliveries INCLUDING ALL) WITH (fillfactor = 70)`);
    await client.query(`CREATE TABLE delivery_attempts_plain (LIKE delivery_attempts INCLUDING ALL)`);
    const foreignKeys = (
      await client.query(
        `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = 'deliveries'::regclass AND contype = 'f'`,
      )
    ).rows;
    await client.query(`DROP TABLE delivery_attempts, deliveries`);
    await client.query(`ALTER TABLE deliveries_plain RENAME TO deliveries`);
    await client.query(`ALTER TABLE delivery_attempts_plain RENAME TO delivery_attempts`);
    for (const { def } of foreignKeys) await client.query(`ALTER TABLE deliveries ADD ${def}`);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}
