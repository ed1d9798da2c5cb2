import { Logger, type LoggerService } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import { loadConfig } from '../config/config.js';
import { RedisClients, type RedisConnectionName } from './redis.module.js';

const NAMES: RedisConnectionName[] = ['rate-limit', 'health', 'queue', 'worker', 'maintenance', 'admission'];

describe('RedisClients', () => {
  const clients = new RedisClients(loadConfig({ NODE_ENV: 'test', REDIS_URL: 'redis://127.0.0.1:6390' }));
  const lines: string[] = [];
  const capture = (message: unknown) => void lines.push(JSON.stringify(message));
  const logger: LoggerService = { log: capture, warn: capture, error: capture };

  beforeAll(() => Logger.overrideLogger(logger));
  afterAll(() => Logger.overrideLogger(false));
  beforeEach(() => lines.splice(0));

  it('gives every connection REDIS_URL, its name and the one retry policy', () => {
    for (const name of NAMES) {
      const options = clients.options(name);
      expect(options).toMatchObject({ url: 'redis://127.0.0.1:6390', connectionName: name, connectTimeout: 2_000 });
      expect([1, 5, 100].map(options.retryStrategy)).toEqual([200, 1_000, 2_000]);
    }
  });

  it("keeps BullMQ's consumer waiting through a reconnect and the request path failing fast", () => {
    expect(clients.options('worker').maxRetriesPerRequest).toBeNull();
    expect(clients.options('maintenance').maxRetriesPerRequest).toBeNull();
    expect(clients.options('rate-limit')).toMatchObject({ enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    expect(clients.options('queue')).toMatchObject({ enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  });

  it('logs a connection error once, naming REDIS_URL, until it changes or the connection is back', () => {
    const emitter = new EventEmitter();
    clients.logErrors('queue', emitter);
    for (let i = 0; i < 3; i++) emitter.emit('error', new Error('connect ECONNREFUSED 127.0.0.1:6390'));
    emitter.emit('error', new Error('getaddrinfo ENOTFOUND redis'));
    emitter.emit('ready');
    emitter.emit('ready');
    emitter.emit('error', new Error('connect ECONNREFUSED 127.0.0.1:6390'));
    expect(lines.map((line) => JSON.parse(line))).toEqual([
      { redis: 'queue', msg: 'Redis (REDIS_URL) connection error: connect ECONNREFUSED 127.0.0.1:6390' },
      { redis: 'queue', msg: 'Redis (REDIS_URL) connection error: getaddrinfo ENOTFOUND redis' },
      { redis: 'queue', msg: 'Redis (REDIS_URL) connection back' },
      { redis: 'queue', msg: 'Redis (REDIS_URL) connection error: connect ECONNREFUSED 127.0.0.1:6390' },
    ]);
  });

  it("logs BullMQ's per-job errors once for all the jobs, not a line each", () => {
    const emitter = new EventEmitter();
    clients.logErrors('worker', emitter);
    for (const id of ['a1', 'b2', 'c3']) emitter.emit('error', new Error(`could not renew lock for job ${id}`));
    expect(lines.map((line) => JSON.parse(line))).toEqual([
      { redis: 'worker', msg: 'Redis (REDIS_URL) connection error: could not renew lock for job <id>' },
    ]);
  });
});
