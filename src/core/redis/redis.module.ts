import { Global, Inject, Injectable, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import type { EventEmitter } from 'node:events';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { AppConfig } from '../config/config.js';
import { APP_CONFIG } from '../config/config.module.js';

// A request never waits long on Redis: without an offline queue a command fails at once while it is away.
const FAIL_FAST = { enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: 500 } satisfies RedisOptions;

/** Every Redis connection of a process, by name, and what each needs beyond the shared policy. */
const CONNECTIONS = {
  // Auto-pipelining: concurrent requests' counts go to Redis in one write instead of one syscall each.
  'rate-limit': { ...FAIL_FAST, enableAutoPipelining: true },
  health: FAIL_FAST,
  // The delivery queue's producer: an enqueue fails fast, as Postgres holds the delivery and the sweeper
  // enqueues it once Redis is back.
  queue: { enableOfflineQueue: false, maxRetriesPerRequest: 1 },
  // BullMQ's consumer: its blocking commands wait through a reconnect instead of failing.
  worker: { maxRetriesPerRequest: null },
  // BullMQ's consumer of the scheduled jobs (sweeper, retention and the like), likewise.
  maintenance: { maxRetriesPerRequest: null },
  // Hosts' admission state, saved by drains and read by /metrics and health.
  admission: { maxRetriesPerRequest: 1, lazyConnect: true, enableAutoPipelining: true },
} satisfies Record<string, RedisOptions>;

export type RedisConnectionName = keyof typeof CONNECTIONS;

/** A connection to one Redis (REDIS_URL) or to a Redis Cluster (REDIS_CLUSTER_NODES): the same commands. */
export type RedisClient = Redis | Cluster;

// Options that ioredis takes for the cluster as a whole; the rest go to each node's connection.
const CLUSTER_LEVEL = ['enableOfflineQueue', 'enableAutoPipelining', 'lazyConnect'] as const;

/** ioredis options with the url; the retry strategy never null, as BullMQ's options type wants. */
type ConnectionOptions = Omit<RedisOptions, 'retryStrategy'> & {
  url: string;
  retryStrategy: (times: number) => number;
};

// The same error again within this time is not logged again: a reconnect loop fails every 2 s.
const REPEAT_LOG_MS = 60_000;

/**
 * Redis on REDIS_URL (or the cluster of REDIS_CLUSTER_NODES) for the whole process, with one retry policy (reconnect after 200 ms, backing off
 * to 2 s, forever) and one error policy (a connection error is logged once, naming REDIS_URL, until it
 * changes or the connection is back). Clients made here close when the application shuts down, after
 * every module's own shutdown (the worker's attempts release their slots first).
 */
@Injectable()
export class RedisClients implements OnApplicationShutdown {
  private readonly logger = new Logger('Redis');
  private readonly clients = new Map<RedisConnectionName, RedisClient>();
  /** Cluster clients handed to BullMQ workers, which do not close a connection they were given. */
  private readonly given: Cluster[] = [];

  private readonly source: string;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    this.source = config.redisClusterNodes ? 'REDIS_CLUSTER_NODES' : 'REDIS_URL';
  }

  /** Options for a connection its user makes and owns (BullMQ's Worker makes its blocking one from them). */
  options(name: RedisConnectionName): ConnectionOptions {
    return {
      ...CONNECTIONS[name],
      url: this.config.redisUrl,
      connectionName: name,
      connectTimeout: 2_000,
      retryStrategy: (times: number) => Math.min(times * 200, 2_000),
    };
  }

  /**
   * What a BullMQ Worker connects with: options on one Redis (it makes and owns its connections, the
   * blocking one its own), or on a cluster a client of its own, which it duplicates for blocking.
   */
  connection(name: RedisConnectionName): ConnectionOptions | Cluster {
    if (!this.config.redisClusterNodes) return this.options(name);
    const cluster = this.cluster(name);
    this.given.push(cluster);
    return cluster;
  }

  /** Closes a cluster client `connection()` handed out, once its worker is closed; options need nothing. */
  release(connection: ConnectionOptions | Cluster): void {
    const at = this.given.indexOf(connection as Cluster);
    if (at < 0) return;
    this.given.splice(at, 1);
    (connection as Cluster).disconnect();
  }

  /** The process's one client of that name, made on first use. */
  get(name: RedisConnectionName): RedisClient {
    let client = this.clients.get(name);
    if (!client) {
      if (this.config.redisClusterNodes) {
        client = this.cluster(name);
      } else {
        const { url, ...options } = this.options(name);
        client = new Redis(url, options);
        this.logErrors(name, client);
      }
      this.clients.set(name, client);
    }
    return client;
  }

  private cluster(name: RedisConnectionName): Cluster {
    const { url: _url, retryStrategy, ...nodeOptions } = this.options(name);
    const clusterOptions: ClusterOptions = { clusterRetryStrategy: retryStrategy };
    const redisOptions: RedisOptions = { ...nodeOptions };
    for (const key of CLUSTER_LEVEL) {
      if (key in nodeOptions) {
        Object.assign(clusterOptions, { [key]: nodeOptions[key] });
        delete redisOptions[key];
      }
    }
    // A cluster's auto-pipelining routes a command by its first argument; admission's scripts begin with
    // their key count, so there it would send them to the wrong node (their batches are pipelines already).
    if (name === 'admission') clusterOptions.enableAutoPipelining = false;
    const cluster = new Cluster(this.config.redisClusterNodes ?? [], { ...clusterOptions, redisOptions });
    this.logErrors(name, cluster);
    return cluster;
  }

  /** Logs the connection errors an emitter reports (a client, or a BullMQ Queue or Worker). */
  logErrors(name: RedisConnectionName, emitter: EventEmitter): void {
    let last = { message: '', at: 0 };
    emitter.on('error', (error: Error) => {
      const now = Date.now();
      // BullMQ names the job in some ("could not renew lock for job <id>"): one line for all of them.
      const message = error.message.replace(/\bjob \S+/g, 'job <id>');
      if (message === last.message && now - last.at < REPEAT_LOG_MS) return;
      last = { message, at: now };
      this.logger.warn({ redis: name, msg: `Redis (${this.source}) connection error: ${message}` });
    });
    emitter.on('ready', () => {
      if (last.message !== '') this.logger.log({ redis: name, msg: `Redis (${this.source}) connection back` });
      last = { message: '', at: 0 };
    });
  }

  onApplicationShutdown(): void {
    for (const client of [...this.clients.values(), ...this.given]) client.disconnect();
  }
}

@Global()
@Module({ providers: [RedisClients], exports: [RedisClients] })
export class RedisModule {}
