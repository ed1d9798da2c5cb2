import type { DataSource, QueryRunner } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import type { Pool, PoolClient, QueryResultRow } from 'pg';

/**
 * A hot statement, parsed and planned once per connection (a named prepared statement) instead of
 * on every call; `name` must be unique per `text`.
 */
export interface PreparedStatement {
  name: string;
  text: string;
}

export const prepared = (name: string, text: string): PreparedStatement => ({ name, text });

/** Runs a prepared statement on the pool, skipping TypeORM's per-query runner. */
export async function queryPrepared<T extends QueryResultRow>(
  dataSource: DataSource,
  statement: PreparedStatement,
  values: unknown[],
): Promise<T[]> {
  const pool = (dataSource.driver as PostgresDriver).master as Pool;
  const result = await pool.query<T>({ ...statement, values });
  return result.rows;
}

/** Runs a prepared statement on the connection a TypeORM query runner holds (inside its transaction). */
export async function queryPreparedOn<T extends QueryResultRow>(
  runner: QueryRunner,
  statement: PreparedStatement,
  values: unknown[],
): Promise<T[]> {
  const client = (await runner.connect()) as PoolClient;
  const result = await client.query<T>({ ...statement, values });
  return result.rows;
}
