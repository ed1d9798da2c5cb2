import { spawnSync } from 'node:child_process';
import { ensureBuilt } from '../support/worker-process.js';

// A bad or missing value stops the process at start, with a message naming the variable.
describe('start-up configuration', () => {
  beforeAll(() => ensureBuilt(), 120_000);

  it.each([
    ['dist/main.js', 'PORT', 'not-a-port', 'PORT'],
    ['dist/worker.js', 'WORKER_CONCURRENCY', '0', 'WORKER_CONCURRENCY'],
    ['dist/migrate.js', 'DATABASE_URL', 'mysql://localhost/db', 'DATABASE_URL'],
    ['dist/main.js', 'ADMIN_USER', 'admin', 'ADMIN_PASSWORD'],
  ])('%s with %s=%s exits 78 naming %s', (entry, name, value, named) => {
    const result = spawnSync(process.execPath, [entry], {
      env: { PATH: process.env.PATH, NODE_ENV: 'test', [name]: value },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(result.status).toBe(78);
    expect(result.stderr).toMatch(new RegExp(`\\b${named}\\b`));
    expect(result.stdout).toBe('');
  });
});
