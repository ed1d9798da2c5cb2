import net from 'node:net';
import type { INestApplication } from '@nestjs/common';
import { Test, type TestingModuleBuilder } from '@nestjs/testing';
import { createId } from '@paralleldrive/cuid2';
import { Queue } from 'bullmq';
import { Cluster } from 'ioredis';
import pg from 'pg';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { AppModule } from '../../src/app.module.js';
import { setupApp } from '../../src/app.setup.js';
import { CalculatorsService } from '../../src/calculators/calculators.service.js';
import type { CalculatorEntity } from '../../src/calculators/calculator.entity.js';
import { loadConfig, type AppConfig } from '../../src/core/config/config.js';
import { runMigrations } from '../../src/core/database/migrate.js';
import { applyServerTimeouts } from '../../src/core/http/server-timeouts.js';
import { QueueLayout } from '../../src/core/redis/queue-layout.js';
import { DELIVERY_QUEUE } from '../../src/delivery/host-wakes.js';
import { MAINTENANCE_QUEUE } from '../../src/scheduling/scheduled-job.js';
import { WorkspacesService } from '../../src/workspaces/workspaces.service.js';
import { watchContract } from './openapi-contract.js';
import type { WorkspaceEntity } from '../../src/workspaces/workspace.entity.js';

export const PG_BASE_URL = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** The Redis Cluster scripts/redis-cluster.sh starts (global-setup starts it when it is down). */
export const TEST_REDIS_CLUSTER_NODES =
  process.env.TEST_REDIS_CLUSTER_NODES ?? '127.0.0.1:7100,127.0.0.1:7101,127.0.0.1:7102';
const TEST_DB_PATTERN = /^cw_test_[a-z0-9]+$/;

export interface TestApp {
  app: INestApplication;
  config: AppConfig;
  dataSource: DataSource;
  http: () => ReturnType<typeof request>;
  close: () => Promise<void>;
}

export interface TestWorkspace {
  workspace: WorkspaceEntity;
  key: string;
}

/** A fresh database (migrated, never synchronized) and queue prefix for one test file. */
export async function createTestDatabaseConfig(overrides: Record<string, string> = {}): Promise<AppConfig> {
  const dbName = `cw_test_${createId()}`;
  const config = loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: `${PG_BASE_URL}/${dbName}`,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: `test-${dbName}`,
    WORKER_ENABLED: 'false',
    SEED_DEMO: 'false',
    METRICS_PORT: '0', // the tests that read /metrics give it a free port
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'error', // 4xx lines are warnings: the tests make thousands
    RATE_LIMIT_PER_IP_PER_MINUTE: '0', // every test client is 127.0.0.1; the rate-limit tests turn it on
    ...overrides,
  });
  await runMigrations(config);
  return config;
}

/** Drops a test database; refuses any name that does not mark it as a test one. */
export async function dropTestDatabase(databaseUrl: string): Promise<void> {
  const name = new URL(databaseUrl).pathname.slice(1);
  if (!TEST_DB_PATTERN.test(name)) throw new Error(`Refusing to drop non-test database ${name}`);
  const client = new pg.Client({ connectionString: `${PG_BASE_URL}/postgres` });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

/** Removes a test file's queue keys from Redis (every shard's); skipped when that Redis cannot be reached. */
export async function clearTestQueue(config: AppConfig): Promise<void> {
  const layout = QueueLayout.of(config);
  const queues = [
    ...layout.deliveryPrefixes.map((prefix) => ({ name: DELIVERY_QUEUE, prefix })),
    { name: MAINTENANCE_QUEUE, prefix: layout.maintenancePrefix },
  ];
  const options = { enableOfflineQueue: false, maxRetriesPerRequest: 1 };
  for (const { name, prefix } of queues) {
    const connection = config.redisClusterNodes
      ? new Cluster(config.redisClusterNodes, { enableOfflineQueue: false, clusterRetryStrategy: () => null })
      : { url: config.redisUrl, ...options, retryStrategy: () => null };
    const queue = new Queue(name, { connection, prefix });
    queue.on('error', () => undefined);
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close().catch(() => undefined);
    if (connection instanceof Cluster) connection.disconnect();
  }
}

/** `customize` may override providers, e.g. the log destination. */
export async function createTestApp(
  overrides: Record<string, string> = {},
  customize: (builder: TestingModuleBuilder) => TestingModuleBuilder = (builder) => builder,
): Promise<TestApp> {
  const config = await createTestDatabaseConfig(overrides);
  const moduleRef = await customize(Test.createTestingModule({ imports: [AppModule.forRoot(config)] })).compile();
  const app = moduleRef.createNestApplication({ bodyParser: false, logger: ['error', 'warn'] });
  const contract = watchContract(app); // every answer of the API checked against its OpenAPI document
  setupApp(app);
  applyServerTimeouts(app.getHttpServer(), config);
  await app.init();
  await contract.load();
  return {
    app,
    config,
    dataSource: app.get(DataSource),
    http: () => request(app.getHttpServer()),
    close: async () => {
      await app.close();
      await clearTestQueue(config);
      await dropTestDatabase(config.databaseUrl);
    },
  };
}

/** A second api replica: the same database, Redis and QUEUE_PREFIX as `t`. */
export async function createReplica(t: TestApp): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({ imports: [AppModule.forRoot(t.config)] }).compile();
  const app = moduleRef.createNestApplication({ bodyParser: false, logger: ['error', 'warn'] });
  const contract = watchContract(app);
  setupApp(app);
  applyServerTimeouts(app.getHttpServer(), t.config);
  await app.init();
  await contract.load();
  return app;
}

/** A Postgres session of the test's own on the app's database (to hold a lock the app then meets); end it. */
export async function databaseSession(t: TestApp): Promise<pg.Client> {
  const session = new pg.Client({ connectionString: t.config.databaseUrl });
  await session.connect();
  return session;
}

export async function createWorkspace(t: TestApp, name = 'Test workspace'): Promise<TestWorkspace> {
  const { workspace, key } = await t.app.get(WorkspacesService).create(name);
  return { workspace, key };
}

export function createCalculator(t: TestApp, workspaceId: string, name = 'Calculator'): Promise<CalculatorEntity> {
  return t.app.get(CalculatorsService).create({ workspaceId, name });
}

export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A TCP port free on 127.0.0.1 right now (for METRICS_PORT and the like). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
