import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import pg from 'pg';
import { request } from 'undici';
import { FaultReceiver, type Behaviour } from './fault-receiver.js';
import { freePort, accepts, waitUntil } from './ports.js';
import { forget, remember } from './leftovers.js';
import { PrivatePostgres } from './private-postgres.js';
import { PrivateRedis } from './private-redis.js';
import { ServiceProcess } from './service-process.js';
import { SubmissionStream, type StreamOptions } from './submission-stream.js';

const execFileAsync = promisify(execFile);

/** Where dist/ is (default: this checkout); FAULTS_APP_DIR points at another build of the app. */
export const APP_DIR = process.env.FAULTS_APP_DIR ?? process.cwd();

export const SHARED_PG = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432';
export const SHARED_REDIS = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const SHARED_CLUSTER = process.env.TEST_REDIS_CLUSTER_NODES ?? '127.0.0.1:7100,127.0.0.1:7101,127.0.0.1:7102';

/**
 * Short schedules so a scenario takes about a minute: 6 attempts over ~3 s, 1 s attempt timeout, and a
 * circuit breaker scaled alike (paused 500 ms after 5 timeouts in a row, at most 16 s after failed probes).
 */
export const FAST_ENV = {
  WORKER_CONCURRENCY: '16',
  DELIVERY_TIMEOUT_MS: '1000',
  DELIVERY_BREAKER_COOLDOWN_MS: '500',
  DELIVERY_RETRY_SCHEDULE: '100ms,200ms,400ms,800ms,1600ms',
  SWEEP_INTERVAL_MS: '1000',
  DELIVERY_LOCK_MS: '2000',
};

/** Submissions per scenario and per second, overridable: FAULTS_SUBMISSIONS=10000 FAULTS_RATE=60. */
export const LOAD = {
  submissions: Number(process.env.FAULTS_SUBMISSIONS ?? 2000),
  perSecond: Number(process.env.FAULTS_RATE ?? 40),
};

export interface ScenarioOptions {
  name: string;
  privatePostgres?: boolean;
  privateRedis?: boolean;
  /** The shared Redis Cluster (scripts/redis-cluster.sh) with this many queue shards, instead of a Redis. */
  clusterShards?: number;
  /** Environment of the api and the workers (retry schedule, timeouts, caps). */
  env?: Record<string, string>;
}

export interface Webhook {
  id: string;
  name: string;
  url: string;
  secret: string;
  calculatorIds: string[];
  receiver?: FaultReceiver;
  /** When POST /webhooks was sent, and when it returned. */
  registeringAt: number;
  registeredAt: number;
}

export interface Removal {
  webhookId: string;
  startedAt: number;
  returnedAt: number;
}

/**
 * One scenario's world: its own database (on the shared Postgres, or a private one it may restart),
 * its own queue prefix (on the shared Redis, or a private one), the real api and worker processes,
 * local receivers. `cleanup()` removes all of it, whatever happened.
 */
export class Scenario {
  readonly startedAt = Date.now();
  readonly database = `cw_test_faults${randomBytes(6).toString('hex')}`;
  readonly queuePrefix = `cwfaults-${randomBytes(6).toString('hex')}`;
  readonly workers: ServiceProcess[] = [];
  readonly otherApis: ServiceProcess[] = [];
  readonly receivers: FaultReceiver[] = [];
  readonly webhooks: Webhook[] = [];
  readonly removals: Removal[] = [];
  api?: ServiceProcess;
  apiUrl = '';
  apiKey = '';
  calculatorIds: string[] = [];
  private pool?: pg.Pool;
  private workerCount = 0;

  private constructor(
    readonly options: ScenarioOptions,
    readonly postgres?: PrivatePostgres,
    readonly redis?: PrivateRedis,
  ) {
    if (!postgres) remember('databases', this.database);
    if (!redis) remember('redisPrefixes', this.queuePrefix);
  }

  static async create(options: ScenarioOptions): Promise<Scenario> {
    // FAULTS_POSTGRES=private: a private server for every scenario, when the shared one is busy with others' connections.
    const ownPostgres = options.privatePostgres || process.env.FAULTS_POSTGRES === 'private';
    const postgres = ownPostgres ? await PrivatePostgres.create() : undefined;
    let redis: PrivateRedis | undefined;
    try {
      redis = options.privateRedis ? await PrivateRedis.create() : undefined;
    } catch (error) {
      postgres?.destroy();
      throw error;
    }
    return new Scenario(options, postgres, redis);
  }

  get databaseUrl(): string {
    return this.postgres ? this.postgres.url(this.database) : `${SHARED_PG}/${this.database}`;
  }

  get redisUrl(): string {
    return this.redis ? this.redis.url : SHARED_REDIS;
  }

  /** The scenario's database, for the end-state checks. */
  get db(): pg.Pool {
    if (!this.pool) {
      this.pool = new pg.Pool({ connectionString: this.databaseUrl, max: 4, connectionTimeoutMillis: 3000 });
      this.pool.on('error', () => undefined); // a restarted private Postgres drops idle clients
    }
    return this.pool;
  }

  private appEnv(extra: Record<string, string>): Record<string, string> {
    return {
      NODE_ENV: 'test',
      DATABASE_URL: this.databaseUrl,
      REDIS_URL: this.redisUrl,
      QUEUE_PREFIX: this.queuePrefix,
      ...(this.options.clusterShards
        ? { REDIS_CLUSTER_NODES: SHARED_CLUSTER, QUEUE_SHARDS: String(this.options.clusterShards) }
        : {}),
      LOG_LEVEL: 'warn',
      SEED_DEMO: 'false',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      // The per-key limit stays on (it is in the request path), far above the stream's rate.
      RATE_LIMIT_PER_MINUTE: '1000000',
      RATE_LIMIT_PER_SECOND: '0',
      RATE_LIMIT_PER_IP_PER_MINUTE: '0', // every client of the scenario is 127.0.0.1
      ...this.options.env,
      ...extra,
    };
  }

  /** The built api (`dist/main.js`) with its in-process worker off; applies the migrations. */
  async startApi(): Promise<void> {
    const port = await freePort();
    this.api = ServiceProcess.spawn(
      'api',
      APP_DIR,
      process.execPath,
      ['dist/main.js'],
      this.appEnv({ PORT: String(port), WORKER_ENABLED: 'false', MIGRATIONS_RUN: 'true', METRICS_PORT: '0' }),
    );
    this.apiUrl = `http://127.0.0.1:${port}`;
    await waitUntil(
      async () => {
        if (!this.api!.alive) throw new Error(`api exited at start:\n${this.api!.output()}`);
        return (await this.get('/healthz').catch(() => ({ status: 0 }))).status === 200;
      },
      60_000,
      'the api to answer /healthz',
    );
  }

  /** Another api process on the same database and queues (no migrations); its URL. */
  async startOtherApi(): Promise<string> {
    const port = await freePort();
    const api = ServiceProcess.spawn(
      `api-${this.otherApis.length + 2}`,
      APP_DIR,
      process.execPath,
      ['dist/main.js'],
      this.appEnv({ PORT: String(port), WORKER_ENABLED: 'false', MIGRATIONS_RUN: 'false', METRICS_PORT: '0' }),
    );
    this.otherApis.push(api);
    const url = `http://127.0.0.1:${port}`;
    await waitUntil(
      async () => {
        if (!api.alive) throw new Error(`${api.name} exited at start:\n${api.output()}`);
        return (
          (await request(`${url}/healthz`).then(
            (r) => (r.body.dump(), r.statusCode),
            () => 0,
          )) === 200
        );
      },
      60_000,
      `${api.name} to answer /healthz`,
    );
    return url;
  }

  /** One more `dist/worker.js`; resolves once it serves /metrics (its consumer has started). */
  async startWorker(extra: Record<string, string> = {}): Promise<ServiceProcess> {
    const metricsPort = await freePort();
    const worker = ServiceProcess.spawn(
      `worker-${++this.workerCount}`,
      APP_DIR,
      process.execPath,
      ['dist/worker.js'],
      this.appEnv({ METRICS_PORT: String(metricsPort), ...extra }),
    );
    this.workers.push(worker);
    await waitUntil(
      async () => {
        if (!worker.alive) throw new Error(`${worker.name} exited at start:\n${worker.output()}`);
        return accepts(metricsPort);
      },
      60_000,
      `${worker.name} to start`,
    );
    return worker;
  }

  private async cli(args: string[]): Promise<Record<string, unknown>> {
    const { stdout } = await execFileAsync(process.execPath, ['dist/cli.js', ...args, '--json'], {
      cwd: APP_DIR,
      env: { PATH: process.env.PATH ?? '', ...this.appEnv({ MIGRATIONS_RUN: 'false' }) },
    });
    return JSON.parse(stdout) as Record<string, unknown>;
  }

  /** A workspace with its API key, and `calculators` calculators, made with the CLI. */
  async createWorkspace(calculators: number): Promise<void> {
    const created = (await this.cli(['workspace:create', '--name', `faults ${this.options.name}`])) as {
      workspace: { id: string };
      apiKey: string;
    };
    this.apiKey = created.apiKey;
    for (let i = 0; i < calculators; i++) {
      const calc = await this.cli(['calculator:create', '--workspace', created.workspace.id, '--name', `calc ${i}`]);
      this.calculatorIds.push(calc.id as string);
    }
  }

  async get(path: string): Promise<{ status: number; body: unknown }> {
    return this.call('GET', path);
  }

  async call(method: string, path: string, body?: object, timeoutMs = 30_000) {
    const res = await request(this.apiUrl + path, {
      method: method as 'GET',
      headers: { 'x-ac-api-key': this.apiKey, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.body.text();
    return { status: res.statusCode, body: text ? (JSON.parse(text) as unknown) : null };
  }

  async startReceiver(name: string, behaviour?: Behaviour): Promise<FaultReceiver> {
    const timeoutMs = Number(this.options.env?.DELIVERY_TIMEOUT_MS ?? 15_000);
    const receiver = await FaultReceiver.start(name, behaviour, timeoutMs);
    this.receivers.push(receiver);
    return receiver;
  }

  /** Registers a webhook at `target` (a receiver, or a URL where nothing listens) on the calculators. */
  async registerWebhook(name: string, target: FaultReceiver | string, calculatorIds: string[]): Promise<Webhook> {
    const url = typeof target === 'string' ? target : target.url;
    const registeringAt = Date.now();
    const created = await this.call('POST', '/api/v1/webhooks', { url, calculators: calculatorIds, name });
    if (created.status !== 200) throw new Error(`POST /webhooks: ${created.status} ${JSON.stringify(created.body)}`);
    const id = (created.body as { data: { id: string } }).data.id;
    const registeredAt = Date.now();
    const secret = await this.get(`/api/v1/webhooks/${id}/secret`);
    const webhook: Webhook = {
      id,
      name,
      url,
      calculatorIds,
      secret: (secret.body as { data: { key: string } }).data.key,
      receiver: typeof target === 'string' ? undefined : target,
      registeringAt,
      registeredAt,
    };
    this.webhooks.push(webhook);
    return webhook;
  }

  /**
   * Three webhooks at healthy receivers (200 after `minMs` plus up to `spreadMs`) on two calculators:
   * a on both, b on the first, c on the second; so a submission has two deliveries.
   */
  async registerHealthyWebhooks(minMs = 5, spreadMs = 20): Promise<Webhook[]> {
    const [calcA, calcB] = this.calculatorIds;
    const healthy = () => ({ status: 200, delayMs: minMs + Math.floor(Math.random() * spreadMs) });
    return [
      await this.registerWebhook('a', await this.startReceiver('a', healthy), [calcA, calcB]),
      await this.registerWebhook('b', await this.startReceiver('b', healthy), [calcA]),
      await this.registerWebhook('c', await this.startReceiver('c', healthy), [calcB]),
    ];
  }

  /** DELETE /webhooks/{id}; records when it was sent and when it returned. */
  async removeWebhook(webhook: Webhook): Promise<Removal> {
    const startedAt = Date.now();
    const res = await this.call('DELETE', `/api/v1/webhooks/${webhook.id}`, undefined, 60_000);
    const returnedAt = Date.now();
    if (res.status !== 200)
      throw new Error(`DELETE /webhooks/${webhook.id}: ${res.status} ${JSON.stringify(res.body)}`);
    const removal = { webhookId: webhook.id, startedAt, returnedAt };
    this.removals.push(removal);
    return removal;
  }

  /** A steady stream of `count` submissions over the scenario's calculators, at LOAD.perSecond. */
  stream(count: number, options: Partial<StreamOptions> = {}): SubmissionStream {
    return new SubmissionStream({
      apiUrl: this.apiUrl,
      apiKey: this.apiKey,
      calculatorIds: this.calculatorIds,
      count,
      perSecond: LOAD.perSecond,
      clientTimeoutMs: 10_000,
      ...options,
    });
  }

  /** The output of every process, for a failure message. */
  processOutput(): string {
    return [this.api, ...this.otherApis, ...this.workers]
      .filter((p): p is ServiceProcess => p !== undefined)
      .map((p) => `----- ${p.name} (${p.alive ? 'running' : 'exited'}) -----\n${p.output().slice(-8000)}`)
      .join('\n');
  }

  /** Stops every process and server, drops the database, deletes the queue's keys. Never throws. */
  async cleanup(): Promise<void> {
    await Promise.all([this.api, ...this.otherApis, ...this.workers].map((p) => p?.kill('SIGKILL')));
    await Promise.all(this.receivers.map((r) => r.close().catch(() => undefined)));
    await this.pool?.end().catch(() => undefined);
    if (this.redis) await this.redis.kill();
    else if (this.options.clusterShards) await deleteClusterKeys(this.queuePrefix).catch(() => undefined);
    else
      await deleteKeys(SHARED_REDIS, this.queuePrefix).then(
        () => forget('redisPrefixes', this.queuePrefix),
        () => undefined,
      );
    if (this.postgres) this.postgres.destroy();
    else
      await dropDatabase(this.database).then(
        () => forget('databases', this.database),
        () => undefined,
      );
  }
}

async function deleteKeys(redisUrl: string, prefix: string): Promise<void> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** A cluster scenario's keys, on every master (one key per DEL: they are in many slots). */
async function deleteClusterKeys(prefix: string): Promise<void> {
  const cluster = new Cluster(
    SHARED_CLUSTER.split(',').map((node) => ({ host: node.split(':')[0], port: Number(node.split(':')[1]) })),
  );
  try {
    for (const node of cluster.nodes('master')) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
        for (const key of keys) await node.del(key);
        cursor = next;
      } while (cursor !== '0');
    }
  } finally {
    cluster.disconnect();
  }
}

async function dropDatabase(name: string): Promise<void> {
  if (!/^cw_test_faults[0-9a-f]+$/.test(name)) throw new Error(`Refusing to drop ${name}`);
  const client = new pg.Client({ connectionString: `${SHARED_PG}/postgres` });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
