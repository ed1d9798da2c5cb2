import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import type { AppConfig } from '../../src/core/config/config.js';

/** Builds dist/ when src/ is newer, so spawned processes run the code under test. */
export function ensureBuilt(): void {
  execFileSync(process.execPath, ['scripts/ensure-build.mjs'], { stdio: 'inherit' });
}

export interface WorkerProcess {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts the real `dist/worker.js` against a test app's database and queue prefix. */
export function spawnWorker(config: AppConfig, env: Record<string, string> = {}): WorkerProcess {
  return spawnProcess('dist/worker.js', config, env);
}

/** Starts a built entrypoint (`dist/main.js`, `dist/worker.js`) against a test database and queue prefix. */
export function spawnProcess(entrypoint: string, config: AppConfig, env: Record<string, string> = {}): WorkerProcess {
  const child = spawn(process.execPath, [entrypoint], {
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'test',
      DATABASE_URL: config.databaseUrl,
      REDIS_URL: config.redisUrl,
      QUEUE_PREFIX: config.queuePrefix,
      QUEUE_SHARDS: String(config.queueShards),
      ...(config.redisClusterNodes
        ? { REDIS_CLUSTER_NODES: config.redisClusterNodes.map(({ host, port }) => `${host}:${port}`).join(',') }
        : {}),
      LOG_LEVEL: 'warn',
      METRICS_PORT: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, output: () => output, exited };
}
