import type { PoolClient, QueryResultRow } from 'pg';
import type { DataSource, EntityManager, EntityTarget, ObjectLiteral } from 'typeorm';

/**
 * A hot statement, parsed and planned once per connection (a named prepared statement) instead of
 * on every call; `name` must be unique per `text`. Each lives with the feature that owns its table.
 */
export interface PreparedStatement {
  name: string;
  text: string;
}

export const prepared = (name: string, text: string): PreparedStatement => ({ name, text });

/**
 * A rare statement, planned on each run with its values (an unnamed statement), so no connection keeps
 * a plan: the generic one Postgres keeps for a named statement after five runs, made while a partition
 * was empty, reads the whole partition once it has filled.
 */
export const plannedEachRun = (text: string): PreparedStatement => ({ name: '', text });

/** Runs a prepared statement on a connection already taken from the pool (see withConnection). */
export async function queryPreparedOn<T extends QueryResultRow>(
  client: PoolClient,
  statement: PreparedStatement,
  values: unknown[],
): Promise<T[]> {
  const result = await client.query<T>({ ...statement, values });
  return result.rows;
}

export interface PooledConnection {
  client: PoolClient;
  release: () => void;
}

/**
 * A connection of TypeORM's pool, through a QueryRunner (its public `connect()` hands out the pg client):
 * same pool, so no more than DATABASE_POOL_SIZE connections, and no round trip besides the statement.
 * The runner also listens for the connection's errors, so a broken one is dropped, never reused.
 */
export async function connectionOf(dataSource: DataSource): Promise<PooledConnection> {
  const runner = dataSource.createQueryRunner();
  try {
    const client = (await runner.connect()) as PoolClient;
    return { client, release: () => void runner.release() };
  } catch (error) {
    await runner.release();
    throw error;
  }
}

/** Runs a prepared statement on any connection of the data source's pool. */
export async function queryPrepared<T extends QueryResultRow>(
  dataSource: DataSource,
  statement: PreparedStatement,
  values: unknown[],
): Promise<T[]> {
  const { client, release } = await connectionOf(dataSource);
  try {
    return await queryPreparedOn<T>(client, statement, values);
  } finally {
    release();
  }
}

/** Runs a prepared statement that returns no rows on any connection of the pool; returns the rows it changed. */
export async function executePrepared(
  dataSource: DataSource,
  statement: PreparedStatement,
  values: unknown[],
): Promise<number> {
  const { client, release } = await connectionOf(dataSource);
  try {
    return (await client.query({ ...statement, values })).rowCount ?? 0;
  } finally {
    release();
  }
}

/** Runs `work` in a TypeORM transaction on its connection, so prepared statements take part in it. */
export function transactionOn<T>(dataSource: DataSource, work: (client: PoolClient) => Promise<T>): Promise<T> {
  return dataSource.transaction(async (manager) => work(await clientOf(manager)));
}

/** The connection of a TypeORM transaction, for prepared statements that take part in it. */
export async function clientOf(manager: EntityManager): Promise<PoolClient> {
  const runner = manager.queryRunner;
  if (!runner) throw new Error('a transaction has a query runner');
  return (await runner.connect()) as PoolClient;
}

/** A select list naming every column of the entity as its property, from TypeORM's metadata. */
export function selectListOf(dataSource: DataSource, entity: EntityTarget<ObjectLiteral>): string {
  return dataSource
    .getMetadata(entity)
    .columns.map((c) => `"${c.databaseName}" AS "${c.propertyName}"`)
    .join(', ');
}
