import { execFileSync } from 'node:child_process';
import net from 'node:net';

function reachable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: 2000 });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });
}

/** Fails the run at once, with the fix, when Postgres or Redis is not up. */
export default async function globalSetup(): Promise<void> {
  const missing = [];
  if (!(await reachable('127.0.0.1', 5432))) missing.push('PostgreSQL on 127.0.0.1:5432');
  if (!(await reachable('127.0.0.1', 6379))) missing.push('Redis on 127.0.0.1:6379');
  if (missing.length > 0) {
    throw new Error(`Tests need ${missing.join(' and ')}; start them (see docs/development.md, "Postgres and Redis").`);
  }
  // The Redis Cluster tests' cluster: started here (idempotent) unless one is given.
  if (!process.env.TEST_REDIS_CLUSTER_NODES) {
    try {
      execFileSync('bash', ['scripts/redis-cluster.sh', 'start'], { stdio: 'pipe' });
    } catch (error) {
      const output = (error as { stderr?: Buffer }).stderr?.toString() ?? '';
      throw new Error(`Tests need a Redis Cluster; scripts/redis-cluster.sh start failed: ${output}`, { cause: error });
    }
  }
}
