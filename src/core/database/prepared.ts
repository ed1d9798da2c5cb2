import type { DataSource } from 'typeorm';
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

/** The pg pool under TypeORM, for hot paths that skip TypeORM's per-query runner. */
export const poolOf = (dataSource: DataSource): Pool => (dataSource.driver as PostgresDriver).master as Pool;

/** Runs a prepared statement on the pool (any of its connections) or on a connection taken from it. */
export async function queryPreparedOn<T extends QueryResultRow>(
  client: Pool | PoolClient,
  statement: PreparedStatement,
  values: unknown[],
): Promise<T[]> {
  const result = await client.query<T>({ ...statement, values });
  return result.rows;
}

/** Runs a prepared statement on any connection of the data source's pool. */
export const queryPrepared = <T extends QueryResultRow>(
  dataSource: DataSource,
  statement: PreparedStatement,
  values: unknown[],
): Promise<T[]> => queryPreparedOn<T>(poolOf(dataSource), statement, values);
