import type { INestApplication } from '@nestjs/common';
import { Redis } from 'ioredis';
import request from 'supertest';
import { ApiKeyCache } from '../../src/auth/api-key-cache.js';
import { generateApiKey, hashApiKey } from '../../src/auth/api-key.js';
import { ApiKeysService } from '../../src/auth/api-keys.service.js';
import { API, client, expectError, expectJson, expectNotAuthenticated } from '../support/management-api.js';
import { createPortalLink, exchange, openSession, sessionClient } from '../support/portal.js';
import { untilClock, waitFor } from '../support/receiver.js';
import {
  createReplica as replicaOf,
  createTestApp,
  createWorkspace,
  dropTestDatabase,
  TEST_REDIS_URL,
  type TestApp,
} from '../support/test-app.js';

const me = (app: INestApplication, key?: string) => {
  const req = request(app.getHttpServer()).get(`${API}/me`);
  return key === undefined ? req : req.set('x-ac-api-key', key);
};

/** The rate-limit script calls (EVALSHA or EVAL, with their arguments) naming `prefix` while `work` runs. */
async function scriptCalls(prefix: string, work: () => Promise<void>): Promise<string[][]> {
  const redis = new Redis(TEST_REDIS_URL);
  const monitor = await redis.monitor(); // a connection of its own
  const calls: string[][] = [];
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    const script = /^eval(sha)?$/i.test(args[0] ?? '') && !source.startsWith('lua');
    if (script && args.some((arg) => arg.startsWith(`${prefix}:{ratelimit}:`))) calls.push(args);
  });
  try {
    await work();
    await new Promise((resolve) => setTimeout(resolve, 100)); // MONITOR's feed lags the replies a little
    return calls;
  } finally {
    monitor.disconnect();
    redis.disconnect();
  }
}

function expectRateLimited(res: request.Response, windowSeconds: number): void {
  const error = expectError(res, 429, 'rate_limited');
  expect(Object.keys(error).sort()).toEqual(['code', 'message']);
  expect(res.headers['retry-after']).toMatch(/^\d+$/);
  expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(windowSeconds);
}

describe('rate limiting (RATE_LIMIT_PER_MINUTE=5)', () => {
  const LIMIT = 5;
  let t: TestApp;
  let replica: INestApplication;

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_PER_MINUTE: String(LIMIT), RATE_LIMIT_PER_SECOND: '0' });
    replica = await replicaOf(t);
  });
  afterAll(async () => {
    await replica.close();
    await t.close();
  });

  it('answers the request over the limit with 429, Retry-After and the rate-limit headers', async () => {
    const { key } = await createWorkspace(t);
    for (let i = 1; i <= LIMIT; i++) {
      const res = await me(t.app, key);
      expectJson(res, 200);
      expect(res.headers['x-ratelimit-limit']).toBe(String(LIMIT));
      expect(res.headers['x-ratelimit-remaining']).toBe(String(LIMIT - i));
      expect(Number(res.headers['x-ratelimit-reset'])).toBeLessThanOrEqual(60);
    }
    const refused = await me(t.app, key);
    expectRateLimited(refused, 60);
    expect(refused.headers['x-ratelimit-remaining']).toBe('0');
  });

  it('counts every endpoint of a key together, and refuses a POST before reading its body', async () => {
    const { key } = await createWorkspace(t);
    const api = (path: string) => request(t.app.getHttpServer()).get(`${API}${path}`).set('x-ac-api-key', key);
    for (const path of ['/me', '/webhooks', '/calculators', '/me', '/webhooks']) expectJson(await api(path), 200);
    const refused = await request(t.app.getHttpServer())
      .post(`${API}/webhooks`)
      .set('x-ac-api-key', key)
      .set('content-type', 'application/json')
      .send('{not even json');
    expectRateLimited(refused, 60);
  });

  it('leaves another key of the same workspace, and another workspace, unaffected', async () => {
    const { workspace, key } = await createWorkspace(t);
    for (let i = 0; i <= LIMIT; i++) await me(t.app, key);
    expectRateLimited(await me(t.app, key), 60);
    const { key: sibling } = await t.app.get(ApiKeysService).issue(workspace.id);
    expectJson(await me(t.app, sibling), 200);
    expectJson(await me(t.app, (await createWorkspace(t)).key), 200);
  });

  it('shares the count between api replicas on the same Redis', async () => {
    const { key } = await createWorkspace(t);
    for (let i = 0; i < 3; i++) expectJson(await me(t.app, key), 200);
    for (let i = 0; i < 2; i++) expectJson(await me(replica, key), 200);
    expectRateLimited(await me(replica, key), 60);
    expectRateLimited(await me(t.app, key), 60);
    // Express matches paths case-insensitively; the limit must too.
    expectRateLimited(await request(t.app.getHttpServer()).get('/API/V1/ME').set('x-ac-api-key', key), 60);
  });

  it('names its counters by the SHA-256 of the key, never the key', async () => {
    const { key } = await createWorkspace(t);
    expectJson(await me(t.app, key), 200);
    const redis = new Redis(TEST_REDIS_URL);
    try {
      const names = await redis.keys(`${t.config.queuePrefix}:{ratelimit}:*`);
      expect(names).toContain(`${t.config.queuePrefix}:{ratelimit}:minute:key:${hashApiKey(key)}`);
      expect(names.join('\n')).not.toContain(key);
    } finally {
      redis.disconnect();
    }
  });

  it('counts a portal session under its link, apart from the key that made it', async () => {
    const { key } = await createWorkspace(t);
    const link = await createPortalLink(client(t, key));
    const session = sessionClient(t, await openSession(t, link));
    for (let i = 0; i < LIMIT; i++) expectJson(await session.get('/webhooks'), 200);
    expectRateLimited(await session.get('/webhooks'), 60);
    expectJson(await me(t.app, key), 200);
    const redis = new Redis(TEST_REDIS_URL);
    try {
      const names = await redis.keys(`${t.config.queuePrefix}:{ratelimit}:*`);
      expect(names).toContain(`${t.config.queuePrefix}:{ratelimit}:minute:portal:${link.id}`);
    } finally {
      redis.disconnect();
    }
  });

  it('counts nothing for a key that fails authentication', async () => {
    const { key } = await createWorkspace(t);
    const wrong = `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`;
    for (let i = 0; i < LIMIT * 2; i++) expectNotAuthenticated(await me(t.app, wrong));
    expectJson(await me(t.app, key), 200);
    const redis = new Redis(TEST_REDIS_URL);
    try {
      expect(await redis.keys(`${t.config.queuePrefix}:{ratelimit}:*:key:${hashApiKey(wrong)}`)).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });
});

describe('rate limiting per client IP (RATE_LIMIT_PER_IP_PER_MINUTE=20), before authentication', () => {
  const IP_LIMIT = 20;
  let t: TestApp;
  let replica: INestApplication;

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_PER_MINUTE: '5', RATE_LIMIT_PER_IP_PER_MINUTE: String(IP_LIMIT) });
    replica = await replicaOf(t);
  });
  afterAll(async () => {
    await replica.close();
    await t.close();
  });

  it('answers a new random well-formed key on every request with 429 once the IP is over its limit', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < IP_LIMIT * 3; i++) {
      const res = await me(i % 2 === 0 ? t.app : replica, generateApiKey().key);
      if (res.status === 429) expectRateLimited(res, 60);
      else expectNotAuthenticated(res);
      statuses.push(res.status);
    }
    expect(statuses.filter((s) => s === 401)).toHaveLength(IP_LIMIT);
    expect(statuses.slice(IP_LIMIT).every((s) => s === 429)).toBe(true);
    expectRateLimited(await me(t.app), 60);
    expectRateLimited(await me(t.app, (await createWorkspace(t)).key), 60);
    for (let i = 0; i < IP_LIMIT; i++) {
      expect((await request(t.app.getHttpServer()).get('/healthz')).status).toBe(200);
    }
    // Public too, but checking a token of its own: guesses are counted like made-up keys.
    expectRateLimited(await exchange(t, generateApiKey().key.replace(/^ack_/, 'acpl_')), 60);
  });
});

describe('rate limiting in one Redis round trip (every rule on)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({
      RATE_LIMIT_PER_MINUTE: '100',
      RATE_LIMIT_PER_SECOND: '100',
      RATE_LIMIT_PER_IP_PER_MINUTE: '1000',
    });
  });
  afterAll(() => t.close());

  it('counts the IP and a known key in one script call; a key new to the process after authentication', async () => {
    expectJson(await me(t.app, (await createWorkspace(t)).key), 200); // starts the key cache
    await waitFor(() => t.app.get(ApiKeyCache).isListening, 5_000, 'the key cache');
    const { key } = await createWorkspace(t);
    const calls = await scriptCalls(t.config.queuePrefix, async () => {
      expectJson(await me(t.app, key), 200);
      expectJson(await me(t.app, key), 200);
    });
    const tracker = `key:${hashApiKey(key)}`;
    const counters = (call: string[]) => call.filter((arg) => arg.includes(':{ratelimit}:') && !arg.endsWith(':-'));
    expect(calls.map(counters)).toEqual([
      [expect.stringMatching(/:ip:ip:.+$/)],
      [expect.stringMatching(`:second:${tracker}$`), expect.stringMatching(`:minute:${tracker}$`)],
      [
        expect.stringMatching(/:ip:ip:.+$/),
        expect.stringMatching(`:second:${tracker}$`),
        expect.stringMatching(`:minute:${tracker}$`),
      ],
    ]);
  });
});

describe('rate limiting per second (RATE_LIMIT_PER_SECOND=3, RATE_LIMIT_PER_MINUTE=0)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_PER_MINUTE: '0', RATE_LIMIT_PER_SECOND: '3' });
  });
  afterAll(() => t.close());

  it('refuses a burst over the limit with Retry-After: 1, and serves again in the next second', async () => {
    const { key } = await createWorkspace(t);
    let burst: request.Response[] = [];
    let answeredAt = 0;
    // The window may turn over mid-burst; 8 requests in one window hold at least 5 past the limit.
    for (let attempt = 0; attempt < 3 && !burst.some((r) => r.status === 429); attempt++) {
      burst = await Promise.all(Array.from({ length: 8 }, () => me(t.app, key)));
      answeredAt = Date.now();
    }
    const refused = burst.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    for (const res of refused) expectRateLimited(res, 1);
    expect(burst.filter((r) => r.status === 200).length).toBeLessThanOrEqual(6);
    // A client that waits the Retry-After it was told is served.
    await untilClock(answeredAt + 1000 * Math.max(...refused.map((r) => Number(r.headers['retry-after']))));
    expectJson(await me(t.app, key), 200);
  });
});

describe('rate limiting off (RATE_LIMIT_PER_MINUTE=0)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_PER_MINUTE: '0', RATE_LIMIT_PER_SECOND: '0' });
  });
  afterAll(() => t.close());

  it('serves any number of requests of one key, without rate-limit headers', async () => {
    const { key } = await createWorkspace(t);
    const responses = await Promise.all(Array.from({ length: 60 }, () => me(t.app, key)));
    for (const res of responses) {
      expectJson(res, 200);
      expect(res.headers['x-ratelimit-limit']).toBeUndefined();
    }
  });
});

describe('rate limiting while Redis is unreachable (every limit on)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({
      REDIS_URL: 'redis://127.0.0.1:1',
      RATE_LIMIT_PER_MINUTE: '2',
      RATE_LIMIT_PER_SECOND: '1',
      RATE_LIMIT_PER_IP_PER_MINUTE: '2',
    });
  });
  afterAll(async () => {
    await t.app.close(); // not t.close(): emptying the queue would wait for Redis
    await dropTestDatabase(t.config.databaseUrl);
  });

  it('lets requests through rather than failing them: a Redis outage is not an API outage', async () => {
    const { key } = await createWorkspace(t);
    for (let i = 0; i < 5; i++) expectJson(await me(t.app, key), 200); // over every limit, per IP too
    expectNotAuthenticated(await me(t.app, generateApiKey().key));
  });
});
