// Ceilings for the HTTP figures: a bare NestJS + Express app doing only each endpoint's own work, with
// nothing of the service around it (no logging, guards, interceptors, validation or serializers):
// - GET /api/v1/constant: a constant JSON body (the framework alone);
// - GET /api/v1/me: GET /me's Redis work, the rate limiter's one script call (same script, same keys);
// - GET /api/v1/webhooks, /api/v1/calculators: the service's own SQL (imported from dist/) on pg, rows as JSON.
// Plain JS, so Nest's decorators are applied as functions. Run as its own process by bench/run.mjs.
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import process from 'node:process';
import pg from 'pg';
import { CALCULATORS_LIST } from '../dist/calculators/calculator.statements.js';
import { COUNT_HITS } from '../dist/core/security/count-hits.js';
import { WEBHOOKS_LIST } from '../dist/webhooks/webhook.statements.js';

const { DATABASE_URL, REDIS_URL, WORKSPACE_ID, QUEUE_PREFIX, POOL_SIZE } = process.env;

// About the size and shape of GET /me's body.
const BODY = {
  id: 'tz4a98xxat96iws9zmbrgj3a',
  name: 'bench',
  createdAt: '2024-01-15T10:30:00.000Z',
  updatedAt: '2024-01-15T10:30:00.000Z',
};

// The service's rate-limit connection (src/core/redis/redis.module.ts) and counters (rate-limiter.ts).
const redis = new Redis(REDIS_URL, { enableAutoPipelining: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
redis.defineCommand('countHits', { numberOfKeys: 3, lua: COUNT_HITS });
const tag = `${QUEUE_PREFIX}:{ratelimit}`;
const pool = new pg.Pool({ connectionString: DATABASE_URL, max: Number(POOL_SIZE) });
const rows = async (statement, values) => (await pool.query({ ...statement, values })).rows;

class CeilingController {
  constant() {
    return BODY;
  }
  async me() {
    await redis.countHits(
      `${tag}:ip:ip:127.0.0.1`,
      `${tag}:-`,
      `${tag}:minute:key:ceiling`,
      1e6,
      60_000,
      0,
      1_000,
      1e6,
      60_000,
    );
    return BODY;
  }
  async webhooks() {
    return { data: await rows(WEBHOOKS_LIST, [WORKSPACE_ID]) };
  }
  async calculators() {
    return { data: await rows(CALCULATORS_LIST, [WORKSPACE_ID, 50, 0]) };
  }
}
Controller('api/v1')(CeilingController);
for (const name of ['constant', 'me', 'webhooks', 'calculators']) {
  Get(name)(CeilingController.prototype, name, Object.getOwnPropertyDescriptor(CeilingController.prototype, name));
}

class CeilingModule {}
Module({ controllers: [CeilingController] })(CeilingModule);

const app = await NestFactory.create(CeilingModule, { logger: ['error', 'warn'] });
app.set('etag', false); // as the service: no hash of every body
// An exit, not a death by the signal, so a --cpu-prof profile is written.
process.once('SIGTERM', async () => {
  await app.close();
  await pool.end();
  redis.disconnect();
  process.exit(0);
});
await app.listen(Number(process.env.PORT), '127.0.0.1');
