import type { AppConfig } from '../../src/core/config/config.js';
import { SHUTDOWN_MARGIN_MS } from '../../src/core/shutdown.js';
import { freePort } from '../faults/support/ports.js';
import { waitFor } from '../support/receiver.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import {
  clearTestQueue,
  createTestDatabaseConfig,
  dropTestDatabase,
  PG_BASE_URL,
  TEST_REDIS_URL,
} from '../support/test-app.js';
import { ensureBuilt, spawnProcess, type WorkerProcess } from '../support/worker-process.js';

const DELIVERY_TIMEOUT_MS = 1000;
const DEADLINE_MS = DELIVERY_TIMEOUT_MS + SHUTDOWN_MARGIN_MS;
// The bound is the process's own; this only covers a busy machine noticing the exit late.
const SLACK_MS = 3000;
const DEADLINE_LINE = new RegExp(`Shutdown unfinished after ${DEADLINE_MS} ms, exiting with 1; abandoned: \\S`);

const ENTRYPOINTS = [
  ['api', 'dist/main.js'],
  ['worker', 'dist/worker.js'],
] as const;

describe('SIGTERM while Redis or Postgres is unreachable (built processes)', () => {
  let config: AppConfig;
  const processes: WorkerProcess[] = [];
  const proxies: TcpProxy[] = [];

  beforeAll(async () => {
    ensureBuilt();
    config = await createTestDatabaseConfig();
  }, 120_000);
  afterEach(async () => {
    for (const p of processes.splice(0)) {
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      await p.exited;
    }
    await Promise.all(proxies.splice(0).map((proxy) => proxy.stop()));
  });
  afterAll(async () => {
    await clearTestQueue(config);
    await dropTestDatabase(config.databaseUrl);
  });

  /** Starts the entrypoint with Redis and Postgres reached through proxies the test can stop. */
  async function start(entrypoint: string, env: Record<string, string> = {}) {
    const redis = TcpProxy.to(TEST_REDIS_URL, 6379);
    const postgres = TcpProxy.to(PG_BASE_URL, 5432);
    proxies.push(redis, postgres);
    await Promise.all([redis.start(), postgres.start()]);
    const port = await freePort();
    const started = spawnProcess(entrypoint, config, {
      REDIS_URL: redis.url(config.redisUrl),
      DATABASE_URL: postgres.url(config.databaseUrl),
      MIGRATIONS_RUN: 'false',
      PORT: String(port),
      DELIVERY_TIMEOUT_MS: String(DELIVERY_TIMEOUT_MS),
      SWEEP_INTERVAL_MS: '200',
      LOG_LEVEL: 'info',
      ...env,
    });
    processes.push(started);
    await waitFor(() => /API listening|Worker running/.test(started.output()), 30_000, `${entrypoint} to start`);
    return { process: started, redis, postgres, port };
  }

  /** Sends SIGTERM; resolves with the exit and how long it took, or null once the bound has passed. */
  async function terminate(p: WorkerProcess) {
    const sentAt = Date.now();
    p.child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), DEADLINE_MS + SLACK_MS)));
    const exit = await Promise.race([p.exited, late]).finally(() => clearTimeout(timer));
    return exit && { ...exit, ms: Date.now() - sentAt, output: p.output().slice(p.output().indexOf('SIGTERM')) };
  }

  /** Exit 0 once everything closed, or 1 at the deadline naming what it abandoned; never a hang. */
  function expectBoundedExit(exit: Awaited<ReturnType<typeof terminate>>) {
    expect(exit).not.toBeNull();
    expect(exit!.signal).toBeNull();
    expect(exit!.ms).toBeLessThan(DEADLINE_MS + SLACK_MS);
    if (exit!.code !== 0) {
      expect(exit!.code).toBe(1);
      expect(exit!.output).toMatch(DEADLINE_LINE);
    }
  }

  describe.each(ENTRYPOINTS)('%s (%s)', (_, entrypoint) => {
    it(`exits within DELIVERY_TIMEOUT_MS + ${SHUTDOWN_MARGIN_MS} ms with Redis unreachable`, async () => {
      const { process: p, redis } = await start(entrypoint);
      await redis.stop();
      await waitFor(() => /ECONNREFUSED/.test(p.output()), 10_000, 'the process to find Redis gone');
      expectBoundedExit(await terminate(p));
    }, 60_000);

    it('exits 0 at once with Postgres unreachable', async () => {
      const { process: p, postgres } = await start(entrypoint);
      const before = p.output().length;
      await postgres.stop();
      await waitFor(
        () => /ECONNREFUSED|Connection terminated/.test(p.output().slice(before)),
        10_000,
        'the process to find Postgres gone',
      );
      const exit = await terminate(p);
      expect(exit).toMatchObject({ code: 0, signal: null });
      expect(exit!.ms).toBeLessThan(SLACK_MS);
    }, 60_000);
  });

  it('the api without its worker closes its Redis clients at once, without errors, while Redis is unreachable', async () => {
    const { process: p, redis, port } = await start('dist/main.js', { WORKER_ENABLED: 'false' });
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    expect(p.output()).toContain(`API reference: http://localhost:${port}/api/v1/docs`);
    await redis.stop();
    await waitFor(() => /ECONNREFUSED/.test(p.output()), 10_000, 'the process to find Redis gone');
    const exit = await terminate(p);
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(exit!.ms).toBeLessThan(SLACK_MS);
    expect(exit!.output).not.toMatch(/"level":"error"/);
  }, 60_000);
});
