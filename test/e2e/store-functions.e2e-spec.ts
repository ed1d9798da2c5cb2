import { DataSource } from 'typeorm';
import type { AppConfig } from '../../src/core/config/config.js';
import { dataSourceOptions } from '../../src/core/database/data-source.js';
import { functionDefinition, STORE_FUNCTIONS } from '../../src/delivery/store/store-functions.js';
import { createTestDatabaseConfig, dropTestDatabase } from '../support/test-app.js';

// The delivery store's plpgsql functions are defined once, in src/delivery/store/sql: what the migrations
// create must be exactly those files, so the two cannot drift.
describe('the delivery store functions', () => {
  let config: AppConfig;
  let dataSource: DataSource;

  beforeAll(async () => {
    config = await createTestDatabaseConfig();
    dataSource = new DataSource(dataSourceOptions(config, 1));
    await dataSource.initialize();
  }, 60_000);

  afterAll(async () => {
    await dataSource?.destroy();
    if (config) await dropTestDatabase(config.databaseUrl);
  });

  const definitionOf = async (name: string): Promise<string> => {
    const [{ definition }] = (await dataSource.query(`SELECT pg_get_functiondef($1::regproc) AS definition`, [
      name,
    ])) as { definition: string }[];
    return definition.trimEnd();
  };

  it.each(STORE_FUNCTIONS)('%s in the database is its sql/ file', async (name) => {
    expect(await definitionOf(name)).toBe(functionDefinition(name));
  });

  it('the newest migration is undone and done again, leaving the functions as their files', async () => {
    await dataSource.undoLastMigration({ transaction: 'each' });
    await dataSource.runMigrations({ transaction: 'each' });
    for (const name of STORE_FUNCTIONS) expect(await definitionOf(name)).toBe(functionDefinition(name));
  });

  it('the database has no other plpgsql function than the store’s and the api-key notifier', async () => {
    const rows = (await dataSource.query(
      `SELECT p.proname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
       JOIN pg_namespace n ON n.oid = p.pronamespace
       WHERE l.lanname = 'plpgsql' AND n.nspname = 'public' ORDER BY p.proname`,
    )) as { proname: string }[];
    expect(rows.map((r) => r.proname)).toEqual([...STORE_FUNCTIONS, 'notify_api_key_revoked'].sort());
  });
});
