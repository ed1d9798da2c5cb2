import 'reflect-metadata';
import { loadConfigOrExit } from './core/config/load-or-exit.js';
import { revertLastMigration, runMigrations } from './core/database/migrate.js';

/** `npm run migration:run` applies pending migrations; `npm run migration:revert` undoes the last one. */
async function main(): Promise<void> {
  const config = loadConfigOrExit();
  if (process.argv[2] === 'revert') {
    await revertLastMigration(config);
    process.stdout.write('Reverted the last migration\n');
    return;
  }
  const applied = await runMigrations(config);
  process.stdout.write(applied.length ? `Applied: ${applied.join(', ')}\n` : 'No pending migrations\n');
}

main().catch((error: Error) => {
  process.stderr.write(`Migration failed: ${error.message}\n`);
  process.exit(1);
});
