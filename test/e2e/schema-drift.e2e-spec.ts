import { DataSource } from 'typeorm';
import type { AppConfig } from '../../src/core/config/config.js';
import { dataSourceOptions } from '../../src/core/database/data-source.js';
import { createTestDatabaseConfig, dropTestDatabase } from '../support/test-app.js';

// CI fails when an entity changes without a migration: the schema the migrations build must be the
// one the entities describe, so TypeORM has nothing to add, alter or drop.
describe('migrations and entities', () => {
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

  it('a database built from the migrations needs no schema change for the entities', async () => {
    const pending = await dataSource.driver.createSchemaBuilder().log();
    expect(pending.upQueries.map((q) => q.query)).toEqual([]);
  });
});
