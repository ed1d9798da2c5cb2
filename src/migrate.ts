import 'reflect-metadata';
import { loadConfigOrExit } from './core/config/load-or-exit.js';
import type { AppConfig } from './core/config/config.js';
import { revertLastMigration, runMigrations } from './core/database/migrate.js';
import { describeStartupFailure } from './core/startup-failure.js';

/** `npm run migration:run` applies pending migrations; `npm run migration:revert` undoes the last one. */
async function main(config: AppConfig): Promise<void> {
  if (process.argv[2] === 'revert') {
    await revertLastMigration(config);
    process.stdout.write('Reverted the last migration\n');
    return;
  }
  const applied = await runMigrations(config);
  process.stdout.write(applied.length ? `Applied: ${applied.join(', ')}\n` : 'No pending migrations\n');
}

const config = loadConfigOrExit();
main(config).catch((error: Error) => {
  process.stderr.write(`Migration failed: ${describeStartupFailure(error, config)}\n`);
  process.exit(1);
});
