// Setup shared by the benchmark and the soak test: settings from the environment, the product's
// environment for a run's own database and queue prefix, and the data set's workspace and calculators.
import { createId } from '@paralleldrive/cuid2';
import { Redis } from 'ioredis';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import process from 'node:process';
import pg from 'pg';

export const PG_URL = (process.env.BENCH_PG_URL || 'postgres://postgres@127.0.0.1:5432').replace(/\/+$/, '');
export const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

/** The integer in environment variable `name`, or `fallback` when it is unset or empty. */
export const envInt = (name, fallback) => {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  if (!/^\d+$/.test(value)) throw new Error(`${name} must be a non-negative integer, got "${value}"`);
  return Number(value);
};

/** The image's NODE_OPTIONS (Dockerfile `ENV NODE_OPTIONS=`): the service is measured as it is deployed. */
const DOCKERFILE = readFileSync('Dockerfile', 'utf8');
export const IMAGE_NODE_OPTIONS = /^ENV NODE_OPTIONS="?([^"\n]*)"?$/m.exec(DOCKERFILE)?.[1] ?? '';

/** The image's MALLOC_ARENA_MAX (Dockerfile `ENV`), given to the api and workers like its NODE_OPTIONS. */
export const IMAGE_MALLOC_ARENA_MAX = /^ENV MALLOC_ARENA_MAX=(\d+)$/m.exec(DOCKERFILE)?.[1];

/** A log function writing `[tag hh:mm:ss] message` lines to stderr. */
export const logger = (tag) => (message) =>
  process.stderr.write(`[${tag} ${new Date().toISOString().slice(11, 19)}] ${message}\n`);

/** The environment of the built api, worker and CLI on the run's own database and queue prefix. */
export function productEnv({ dbName, queuePrefix }, extra) {
  return {
    NODE_ENV: 'production',
    DATABASE_URL: `${PG_URL}/${dbName}`,
    REDIS_URL,
    QUEUE_PREFIX: queuePrefix,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', // the receiver is local
    SEED_DEMO: 'false',
    METRICS_PORT: '0',
    ...(IMAGE_MALLOC_ARENA_MAX ? { MALLOC_ARENA_MAX: IMAGE_MALLOC_ARENA_MAX } : {}),
    ...extra,
  };
}

/** One statement on the `postgres` database: a database cannot be created or dropped from inside itself. */
async function adminQuery(sql) {
  const admin = new pg.Client({ connectionString: `${PG_URL}/postgres` });
  await admin.connect();
  await admin.query(sql);
  await admin.end();
}

/** Creates database `name` and registers its drop in `cleanups`. */
export async function createDatabase(name, cleanups, log) {
  await adminQuery(`CREATE DATABASE ${name}`);
  cleanups.push(async () => {
    await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    log(`dropped database ${name}`);
  });
}

/** Deletes every Redis key under the given prefixes; returns how many it deleted. */
export async function deleteRedisKeys(prefixes) {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  let deleted = 0;
  for (const prefix of prefixes) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      if (keys.length > 0) deleted += await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  }
  redis.disconnect();
  return deleted;
}

/**
 * A workspace made through the CLI (run with `env`), with `calculatorCount` published calculators inserted
 * by SQL (the CLI makes one per process): { workspace, apiKey, calculators }.
 */
export async function createWorkspace(db, name, env, calculatorCount) {
  const out = execFileSync(process.execPath, ['dist/cli.js', 'workspace:create', '--name', name, '--json'], {
    env: { PATH: process.env.PATH, ...env },
    encoding: 'utf8',
  });
  const { workspace, apiKey } = JSON.parse(out);
  const calculators = Array.from({ length: calculatorCount }, () => createId());
  const base = Date.now() - 60_000;
  await db.query(
    `INSERT INTO calculators (id, workspace_id, folder_id, name, status, created_at, updated_at)
     SELECT c.id, $1, $2, 'Calculator ' || c.n, 'published', to_timestamp(($3 + c.n) / 1000.0), to_timestamp(($3 + c.n) / 1000.0)
     FROM unnest($4::varchar[]) WITH ORDINALITY AS c(id, n)`,
    [workspace.id, createId(), base, calculators],
  );
  return { workspace, apiKey, calculators };
}

/**
 * Workspaces inserted by SQL, each with an API key (made as src/auth/api-key.ts makes one) and one
 * published calculator: for phases needing many, where the CLI would start a process per workspace.
 * Returns [{ workspaceId, apiKey, calculator }] in the names' order.
 */
export async function insertWorkspaces(db, names) {
  const rows = names.map((name) => {
    const apiKey = `ack_${randomBytes(4).toString('hex')}_${randomBytes(32).toString('base64url')}`;
    return { name, workspaceId: createId(), keyId: createId(), apiKey, calculator: createId() };
  });
  const column = (field) => rows.map((r) => r[field]);
  await db.query('BEGIN');
  try {
    await db.query(`INSERT INTO workspaces (id, name) SELECT * FROM unnest($1::varchar[], $2::varchar[])`, [
      column('workspaceId'),
      column('name'),
    ]);
    await db.query(
      `INSERT INTO api_keys (id, workspace_id, prefix, key_hash)
       SELECT * FROM unnest($1::varchar[], $2::varchar[], $3::varchar[], $4::varchar[])`,
      [
        column('keyId'),
        column('workspaceId'),
        rows.map((r) => r.apiKey.slice(0, 12)),
        rows.map((r) => createHash('sha256').update(r.apiKey).digest('hex')),
      ],
    );
    await db.query(
      `INSERT INTO calculators (id, workspace_id, folder_id, name, status)
       SELECT c, w, $3, 'Calculator 1', 'published' FROM unnest($1::varchar[], $2::varchar[]) AS t(c, w)`,
      [column('calculator'), column('workspaceId'), createId()],
    );
    await db.query('COMMIT');
  } catch (error) {
    await db.query('ROLLBACK');
    throw error;
  }
  return rows.map(({ workspaceId, apiKey, calculator }) => ({ workspaceId, apiKey, calculator }));
}
