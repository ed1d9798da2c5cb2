import type { AppConfig } from './config/config.js';
import { ConfigModule } from './config/config.module.js';
import { DatabaseModule } from './database/database.module.js';

/**
 * Shared core every process needs: configuration and the database. In a file of its own so that the
 * worker and the CLI, which import it, do not load the HTTP API's modules with it (app.module.ts does).
 */
export const coreImports = (config: AppConfig) => [ConfigModule.forRoot(config), DatabaseModule];
