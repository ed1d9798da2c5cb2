import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import type { AppConfig } from '../../src/core/config/config.js';
import { createTestDatabaseConfig, dropTestDatabase } from '../support/test-app.js';
import { ensureBuilt, spawnWorker, type WorkerProcess } from '../support/worker-process.js';

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

// An unreachable service or a taken port names the variable to check.
describe('start-up failures', () => {
  let config: AppConfig;
  beforeAll(async () => {
    ensureBuilt();
    config = await createTestDatabaseConfig();
  }, 120_000);
  afterAll(() => dropTestDatabase(config.databaseUrl));

  const waitFor = async (worker: WorkerProcess, pattern: RegExp) => {
    for (let i = 0; i < 100 && !pattern.test(worker.output()); i++) await new Promise((r) => setTimeout(r, 100));
    return worker.output();
  };

  it('PORT=abc is told the range once, not three contradictory rules', () => {
    const result = spawnSync(process.execPath, ['dist/main.js'], {
      env: { PATH: process.env.PATH, NODE_ENV: 'test', PORT: 'abc' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(result.status).toBe(78);
    expect(result.stderr).toBe('Invalid configuration:\n  PORT: must be an integer from 0 to 65535\n');
  });

  it.each(['dist/main.js', 'dist/worker.js', 'dist/migrate.js'])(
    '%s with Postgres refusing connections exits 1 naming Postgres and DATABASE_URL',
    (entry) => {
      const result = spawnSync(process.execPath, [entry], {
        env: {
          PATH: process.env.PATH,
          NODE_ENV: 'test',
          DATABASE_URL: 'postgres://postgres@127.0.0.1:1/cw',
          METRICS_PORT: '0',
        },
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(result.status).toBe(1);
      expect(result.stderr).toMatch(/Cannot reach Postgres at 127\.0\.0\.1:1 \(check DATABASE_URL\)/);
    },
    35_000,
  );

  it('a worker with Redis unreachable says to check REDIS_URL', async () => {
    const worker = spawnWorker(config, { REDIS_URL: 'redis://127.0.0.1:1' });
    try {
      expect(await waitFor(worker, /REDIS_URL/)).toMatch(/Redis \(REDIS_URL\) connection error: connect ECONNREFUSED/);
    } finally {
      worker.child.kill('SIGKILL');
      await worker.exited;
    }
  }, 30_000);

  it('a second worker on a host whose METRICS_PORT is taken exits 1 naming METRICS_PORT', async () => {
    const taken = net.createServer().listen(0);
    await once(taken, 'listening');
    const { port } = taken.address() as net.AddressInfo;
    try {
      const worker = spawnWorker(config, { METRICS_PORT: String(port) });
      expect(await worker.exited).toEqual({ code: 1, signal: null });
      expect(worker.output()).toContain(`METRICS_PORT ${port} is already in use`);
    } finally {
      taken.close();
    }
  }, 30_000);
});
