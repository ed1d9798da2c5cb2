import pg from 'pg';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../config/config.js';
import { dataSourceOptions } from './data-source.js';
import { DatabaseLock } from './database-lock.js';

/** Creates the configured database when it does not exist yet (a fresh machine has none). */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount === 0) {
      await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`).catch((error: { code?: string }) => {
        if (error.code !== '42P04') throw error; // created meanwhile by another process
      });
    }
  } finally {
    await client.end();
  }
}

/** Applies pending migrations under a Postgres advisory lock; returns the names applied. */
export async function runMigrations(config: AppConfig): Promise<string[]> {
  await ensureDatabase(config.databaseUrl);
  const dataSource = new DataSource({ ...dataSourceOptions(config, 2), migrationsTransactionMode: 'each' });
  await dataSource.initialize();
  const runner = dataSource.createQueryRunner();
  try {
    await runner.connect();
    await runner.query('SELECT pg_advisory_lock($1)', [DatabaseLock.Migration]);
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    return applied.map((m) => m.name);
  } finally {
    await runner.query('SELECT pg_advisory_unlock($1)', [DatabaseLock.Migration]).catch(() => undefined);
    await runner.release();
    await dataSource.destroy();
  }
}

/** Reverts the last applied migration (`npm run migration:revert`). */
export async function revertLastMigration(config: AppConfig): Promise<void> {
  const dataSource = new DataSource(dataSourceOptions(config, 1));
  await dataSource.initialize();
  try {
    await dataSource.undoLastMigration({ transaction: 'each' });
  } finally {
    await dataSource.destroy();
  }
}
