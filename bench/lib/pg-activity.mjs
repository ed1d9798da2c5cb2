// Postgres connections seen from both ends, for the delivery-engine phases: pg_stat_activity of the bench
// database sampled on a timer, and which of its backends belong to a given process, matched by TCP port:
// the local ports of the process's own sockets (its /proc fd table and /proc/<pid>/net/tcp{,6}, what
// `ss -tnp` reads) against pg_stat_activity.client_port. No product code is involved, so it holds for
// any worker, however it names or pools its connections.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

/** Backends serving database `dbName`, but for the connection asking and the pids in `except` (a sampler's own). */
export async function postgresBackends(db, dbName, except = []) {
  const { rows } = await db.query('SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [
    dbName,
  ]);
  return rows.map((r) => r.pid).filter((pid) => !except.includes(pid));
}

/** The process and its descendants (children of every thread), read from /proc. */
export function processTree(pid) {
  const pids = [pid];
  for (let i = 0; i < pids.length; i += 1) {
    let tasks;
    try {
      tasks = readdirSync(`/proc/${pids[i]}/task`);
    } catch {
      continue; // gone
    }
    for (const tid of tasks) {
      try {
        const children = readFileSync(`/proc/${pids[i]}/task/${tid}/children`, 'utf8').trim();
        if (children) pids.push(...children.split(/\s+/).map(Number));
      } catch {
        // thread gone meanwhile
      }
    }
  }
  return pids;
}

/** Socket inodes the process has open. */
function socketInodes(pid) {
  const inodes = new Set();
  let fds;
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return inodes;
  }
  for (const fd of fds) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match) inodes.add(match[1]);
    } catch {
      // closed meanwhile
    }
  }
  return inodes;
}

/** Local ports of the TCP connections that `pids` hold to remote port `remotePort` (IPv4 and IPv6). */
export function localPortsTo(pids, remotePort) {
  const ports = new Set();
  for (const pid of pids) {
    const inodes = socketInodes(pid);
    if (inodes.size === 0) continue;
    for (const table of ['tcp', 'tcp6']) {
      let text;
      try {
        text = readFileSync(`/proc/${pid}/net/${table}`, 'utf8');
      } catch {
        continue;
      }
      for (const line of text.split('\n').slice(1)) {
        const f = line.trim().split(/\s+/);
        if (f.length < 10 || !inodes.has(f[9])) continue;
        const local = parseInt(f[1].split(':').at(-1), 16);
        const remote = parseInt(f[2].split(':').at(-1), 16);
        if (remote === remotePort) ports.add(local);
      }
    }
  }
  return ports;
}

const IDLE_IN_TRANSACTION = new Set(['idle in transaction', 'idle in transaction (aborted)']);

/**
 * Samples pg_stat_activity of database `dbName` every `intervalMs` on a connection of its own (excluded from
 * every figure), and keeps the maxima: backends of the database, backends in `idle in transaction`, and
 * backends whose client is one of `ownerPids()`'s TCP sockets (the worker's connections).
 */
export class PgActivitySampler {
  constructor({ connectionString, dbName, pgPort, ownerPids, intervalMs = 100 }) {
    this.connectionString = connectionString;
    this.dbName = dbName;
    this.pgPort = pgPort;
    this.ownerPids = ownerPids;
    this.intervalMs = intervalMs;
    this.samples = 0;
    this.max = { backends: 0, idleInTransaction: 0, owner: 0, ownerIdleInTransaction: 0, ownerActive: 0 };
    this.ownerStatesAtMax = null;
    this.slowestSampleMs = 0;
    this.errors = 0;
  }

  async start() {
    this.client = new pg.Client({ connectionString: this.connectionString, application_name: 'cw-bench-sampler' });
    await this.client.connect();
    this.samplerPid = (await this.client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    this.running = true;
    this.startedAt = performance.now();
    this.loop = this.run();
  }

  async run() {
    while (this.running) {
      const started = performance.now();
      try {
        await this.sampleOnce();
      } catch {
        this.errors += 1;
      }
      const took = performance.now() - started;
      this.slowestSampleMs = Math.max(this.slowestSampleMs, took);
      await sleep(Math.max(0, this.intervalMs - took));
    }
  }

  async sampleOnce() {
    const { rows } = await this.client.query(
      `SELECT pid, state, client_port FROM pg_stat_activity
       WHERE datname = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
      [this.dbName],
    );
    // Read the sockets after the query: a backend listed is matched while its client socket still exists.
    const ports = localPortsTo(
      this.ownerPids().flatMap((pid) => processTree(pid)),
      this.pgPort,
    );
    const owner = rows.filter((r) => ports.has(r.client_port));
    const idle = rows.filter((r) => IDLE_IN_TRANSACTION.has(r.state)).length;
    const ownerIdle = owner.filter((r) => IDLE_IN_TRANSACTION.has(r.state)).length;
    const ownerActive = owner.filter((r) => r.state === 'active').length;
    this.samples += 1;
    const m = this.max;
    m.backends = Math.max(m.backends, rows.length);
    m.idleInTransaction = Math.max(m.idleInTransaction, idle);
    m.ownerIdleInTransaction = Math.max(m.ownerIdleInTransaction, ownerIdle);
    m.ownerActive = Math.max(m.ownerActive, ownerActive);
    if (this.ownerStatesAtMax === null || owner.length > m.owner) {
      m.owner = owner.length;
      this.ownerStatesAtMax = Object.fromEntries(
        [...new Set(owner.map((r) => r.state ?? 'null'))].map((s) => [
          s,
          owner.filter((r) => (r.state ?? 'null') === s).length,
        ]),
      );
    }
  }

  /** Stops sampling; returns the figures. */
  async stop() {
    this.running = false;
    await this.loop;
    await this.client.end();
    const seconds = (performance.now() - this.startedAt) / 1000;
    return {
      intervalMs: this.intervalMs,
      samples: this.samples,
      samplesPerSec: Math.round((this.samples / seconds) * 10) / 10,
      slowestSampleMs: Math.round(this.slowestSampleMs),
      errors: this.errors,
      maxBackends: this.max.backends,
      maxIdleInTransaction: this.max.idleInTransaction,
      maxWorkerConnections: this.max.owner,
      workerStatesAtMax: this.ownerStatesAtMax,
      maxWorkerIdleInTransaction: this.max.ownerIdleInTransaction,
      maxWorkerActive: this.max.ownerActive,
    };
  }
}
