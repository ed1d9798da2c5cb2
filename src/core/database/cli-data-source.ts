import { fileURLToPath } from 'node:url';
import { DataSource } from 'typeorm';
import { loadConfig } from '../config/config.js';
import { dataSourceOptions } from './data-source.js';

/**
 * For the TypeORM CLI, e.g. `npx typeorm migration:show -d dist/core/database/cli-data-source.js`. It runs
 * outside Nest, so no module registers the entities: every built `*.entity.js` file holds some.
 */
export default new DataSource({
  ...dataSourceOptions(loadConfig()),
  entities: [fileURLToPath(new URL('../../**/*.entity.js', import.meta.url))],
});
