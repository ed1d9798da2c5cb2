import { HealthIndicatorService } from '@nestjs/terminus';
import { createId } from '@paralleldrive/cuid2';
import { RedisClients } from '../../src/core/redis/redis.module.js';
import { RedisHealthIndicator } from '../../src/health/redis.health.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { createTestApp, dropTestDatabase, PG_BASE_URL, type TestApp } from '../support/test-app.js';

/** Closes an app whose Redis or Postgres is down (createTestApp's close would wait on Redis). */
async function closeApp(t: TestApp): Promise<void> {
  await t.app.close();
  await dropTestDatabase(t.config.databaseUrl);
}

describe('health probes', () => {
  describe('with Postgres and Redis up', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp();
    });
    afterAll(() => t.close());

    it('GET /healthz answers 200 without an API key', async () => {
      const res = await t.http().get('/healthz').expect(200);
      expect(res.body).toMatchObject({ status: 'ok' });
    });

    it('the Redis check of a process just started waits for its connection instead of reporting Redis down', async () => {
      // A new process's health connection, checked before it has connected (what /readyz saw when hit
      // right after "API listening"): with no offline queue, a bare ping fails at once.
      const clients = new RedisClients(t.config);
      try {
        const indicator = new RedisHealthIndicator(clients, t.app.get(HealthIndicatorService));
        expect(clients.get('health').status).toBe('connecting');
        await expect(indicator.pingCheck('redis', 1_500)).resolves.toMatchObject({ redis: { status: 'up' } });
      } finally {
        clients.onApplicationShutdown();
      }
    });

    it('GET /readyz answers 200 naming Postgres and Redis up', async () => {
      const res = await t.http().get('/readyz').expect(200);
      expect(res.body).toMatchObject({
        status: 'ok',
        info: { postgres: { status: 'up' }, redis: { status: 'up' } },
      });
    });

    it('serves neither probe under /api/v1', async () => {
      await t.http().get('/api/v1/healthz').expect(404);
      await t.http().get('/api/v1/readyz').expect(404);
    });
  });

  describe('with Redis unreachable', () => {
    let t: TestApp;
    beforeAll(async () => {
      // Port 1: nothing listens, every connection is refused. The app must start all the same.
      t = await createTestApp({ REDIS_URL: 'redis://127.0.0.1:1' });
    });
    afterAll(() => closeApp(t));

    it('GET /healthz still answers 200: the process is alive', async () => {
      await t.http().get('/healthz').expect(200);
    });

    it('GET /readyz answers 503 naming Redis down and Postgres up', async () => {
      const res = await t.http().get('/readyz').expect(503);
      expect(res.body).toMatchObject({
        status: 'error',
        info: { postgres: { status: 'up' } },
        error: { redis: { status: 'down' } },
      });
    });
  });

  describe('with Postgres going away after start', () => {
    const proxy = TcpProxy.to(PG_BASE_URL, 5432);
    let t: TestApp;
    beforeAll(async () => {
      await proxy.start();
      t = await createTestApp({ DATABASE_URL: proxy.url(`${PG_BASE_URL}/cw_test_${createId()}`) });
    });
    afterAll(async () => {
      await t.close();
      await proxy.stop();
    });

    it('GET /readyz answers 503 naming Postgres down, then 200 once it is back', async () => {
      await t.http().get('/readyz').expect(200);
      await proxy.stop();
      const down = await t.http().get('/readyz').expect(503);
      expect(down.body).toMatchObject({
        status: 'error',
        info: { redis: { status: 'up' } },
        error: { postgres: { status: 'down' } },
      });
      await t.http().get('/healthz').expect(200);
      await proxy.start();
      await t.http().get('/readyz').expect(200);
    });
  });
});
