import { DataSource } from 'typeorm';
import { loadConfig } from '../config/config.js';
import { dataSourceOptions } from './data-source.js';

/** For the TypeORM CLI, e.g. `npx typeorm migration:show -d dist/core/database/cli-data-source.js`. */
export default new DataSource(dataSourceOptions(loadConfig()));
