// Before the scenarios: shared Postgres and Redis up, dist/ built from the current src/, nothing left
// from an interrupted run, and an interrupted run from now on cleans up after itself.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import { removeLeftovers } from './leftovers.mjs';

const reachable = (host, port) =>
  new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: 2000 });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });

export default async function globalSetup() {
  const missing = [];
  if (!(await reachable('127.0.0.1', 5432))) missing.push('PostgreSQL on 127.0.0.1:5432');
  if (!(await reachable('127.0.0.1', 6379))) missing.push('Redis on 127.0.0.1:6379');
  if (missing.length > 0) throw new Error(`The fault suite needs ${missing.join(' and ')}`);
  // The redis-master-kill scenario's cluster (idempotent; it also brings a cluster a run left degraded back).
  if (!process.env.TEST_REDIS_CLUSTER_NODES)
    execFileSync('bash', ['scripts/redis-cluster.sh', 'start'], { stdio: 'inherit' });
  execFileSync(process.execPath, ['scripts/ensure-build.mjs'], {
    cwd: process.env.FAULTS_APP_DIR ?? process.cwd(),
    stdio: 'inherit',
  });
  mkdirSync('test-results/faults', { recursive: true });
  rmSync('test-results/faults/summaries.jsonl', { force: true });
  removeLeftovers();
  // Scenarios run in this process (--runInBand); this is the real `process`, unlike the tests' copy.
  process.once('exit', removeLeftovers);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.once(signal, () => {
      removeLeftovers();
      process.kill(process.pid, signal);
    });
  }
}
