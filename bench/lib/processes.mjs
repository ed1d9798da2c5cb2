// Child processes of a bench run: spawn, wait until ready, sample memory, stop; all tracked for the cleanup
// that ends every run (or a SIGINT/SIGTERM).
import { Buffer } from 'node:buffer';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, readFileSync } from 'node:fs';
import net from 'node:net';
import process from 'node:process';
import { clearInterval, setInterval } from 'node:timers';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';

const OUTPUT_TAIL_CHARS = 16_000;
const children = new Set();

/** A free TCP port on 127.0.0.1 (asked of the kernel, then released). */
export async function freePort() {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Starts `node [flags] script` with exactly `env` (plus PATH); keeps the tail of its output for error reports. */
export function spawnNode(name, script, env, nodeFlags = [], { expectExit = false } = {}) {
  const child = spawn(process.execPath, [...nodeFlags, script], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // The last chunks, dropped from the front past twice the tail: a child logging at info writes thousands of
  // lines a second, and copying the whole tail per chunk took CPU from the processes being measured.
  let chunks = [];
  let kept = 0;
  const keep = (chunk) => {
    chunks.push(chunk);
    kept += chunk.length;
    while (kept - chunks[0].length >= 2 * OUTPUT_TAIL_CHARS) kept -= chunks.shift().length;
  };
  const output = () => {
    chunks = [Buffer.concat(chunks)];
    return chunks[0].toString().slice(-OUTPUT_TAIL_CHARS);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  // BENCH_CHILD_LOGS=<dir>: each child's whole output in <dir>/<name>-<pid>.log (only its tail is kept otherwise).
  if (process.env.BENCH_CHILD_LOGS) {
    const file = createWriteStream(`${process.env.BENCH_CHILD_LOGS}/${name}-${child.pid}.log`);
    child.stdout.pipe(file);
    child.stderr.pipe(file);
  }
  const handle = {
    name,
    stopping: expectExit,
    child,
    pid: child.pid,
    output,
    exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))),
  };
  children.add(handle);
  handle.exited.then(({ code, signal }) => {
    children.delete(handle);
    // An exit nobody asked for is the first thing to know when a phase then fails.
    if (!handle.stopping) {
      process.stderr.write(`[bench] ${name} (pid ${handle.pid}) exited unexpectedly: code ${code}, signal ${signal}\n`);
      process.stderr.write(`[bench] last output of ${name}:\n${output().slice(-4000)}\n`);
    }
  });
  return handle;
}

/** Polls `url` until it answers 2xx; fails early, with the process's output, if the process exits. */
export async function waitForHttp(handle, url, timeoutMs = 60_000) {
  let exited = false;
  handle.exited.then(() => (exited = true));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${handle.name} exited before it was ready:\n${handle.output()}`);
    try {
      const { statusCode, body } = await request(url);
      await body.dump();
      if (statusCode >= 200 && statusCode < 300) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`${handle.name} not ready at ${url} after ${timeoutMs} ms:\n${handle.output()}`);
}

/** A field of /proc/<pid>/status in MiB (VmRSS now, VmHWM peak), or null once the process is gone. */
export function procMemoryMb(pid, field) {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : null;
  } catch {
    return null;
  }
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time (user + system) a process has used so far, in ms; null once it is gone. */
export function procCpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from the 3rd (state) on
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS; // utime, stime
  } catch {
    return null;
  }
}

/** Share of the machine's CPU time that was busy over `ms` (all processes, all cores), 0..1. */
export async function machineBusy(ms = 1000) {
  const before = machineCpu();
  await sleep(ms);
  return busyBetween(before, machineCpu());
}

/** The machine's CPU counters (all cores), for busyBetween. */
export function machineCpu() {
  const [, ...values] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
  const n = values.map(Number);
  return { idle: n[3] + n[4], total: n.reduce((a, b) => a + b, 0) }; // idle + iowait
}

/** Share of the machine's CPU (all cores) busy between two machineCpu() readings. */
export function busyBetween(before, after) {
  const total = after.total - before.total;
  return total > 0 ? 1 - (after.idle - before.idle) / total : null;
}

/**
 * Stops a child with SIGTERM (its graceful shutdown, which also writes a --cpu-prof profile), then
 * SIGKILL after `graceMs`. Returns its peak RSS (VmHWM, MiB) read just before the signal.
 */
export async function stopProcess(handle, graceMs = 20_000) {
  const peakMb = procMemoryMb(handle.pid, 'VmHWM');
  if (handle.child.exitCode !== null || handle.child.signalCode !== null) return peakMb;
  handle.stopping = true;
  handle.child.kill('SIGTERM');
  const timer = sleep(graceMs).then(() => 'timeout');
  if ((await Promise.race([handle.exited, timer])) === 'timeout') {
    handle.child.kill('SIGKILL');
    await handle.exited;
  }
  return peakMb;
}

/** Kills every child still running (used on failure and at the end). */
export async function stopAll() {
  await Promise.all([...children].map((handle) => stopProcess(handle, 10_000)));
}

/**
 * The run's cleanup, `cleanup()`: stops every child process, then runs `steps` last first (a failing step
 * is logged and the rest still run). The first SIGINT or SIGTERM runs it too, then exits 130;
 * `interrupted()` tells whether one came.
 */
export function setUpCleanup(steps, log) {
  const cleanup = async () => {
    await stopAll();
    for (const step of steps.reverse()) {
      try {
        await step();
      } catch (error) {
        log(`cleanup step failed: ${error.message}`);
      }
    }
    steps.length = 0;
  };
  let interrupted = false;
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      if (interrupted) return;
      interrupted = true;
      log(`${signal}: stopping and cleaning up`);
      cleanup().finally(() => process.exit(130));
    });
  }
  return { cleanup, interrupted: () => interrupted };
}

/**
 * Samples VmRSS of the tracked processes every `intervalMs`, keeping the maximum per role and per phase
 * (the phase says which part of the run drove memory up; VmHWM at stop gives the true peak).
 */
export class RssSampler {
  constructor(intervalMs = 200) {
    this.roles = new Map(); // role -> Set of handles
    this.phase = 'setup';
    this.max = {}; // role -> { overall, byPhase: { phase: mb } }
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  track(role, handle) {
    if (!this.roles.has(role)) this.roles.set(role, new Set());
    this.roles.get(role).add(handle);
    handle.exited.then(() => this.roles.get(role).delete(handle));
  }

  sample() {
    for (const [role, handles] of this.roles) {
      for (const handle of handles) {
        const mb = procMemoryMb(handle.pid, 'VmRSS');
        if (mb === null) continue;
        const entry = (this.max[role] ??= { overall: 0, byPhase: {} });
        entry.overall = Math.max(entry.overall, mb);
        entry.byPhase[this.phase] = Math.max(entry.byPhase[this.phase] ?? 0, mb);
      }
    }
  }

  stop() {
    clearInterval(this.timer);
  }
}

/**
 * CPU time of a set of processes between two snapshots, by role: `roles()` returns
 * { role: [pid, ...] } when called (a role's pids may change, e.g. Postgres backends).
 */
export class CpuProbe {
  constructor(roles) {
    this.roles = roles;
  }

  async snapshot() {
    const snap = {};
    for (const [role, pids] of Object.entries(await this.roles())) {
      snap[role] = Object.fromEntries(pids.map((pid) => [pid, procCpuMs(pid)]));
    }
    return snap;
  }

  /** ms used per role; a pid missing from `before` (started meanwhile) counts from zero. */
  since(before, after) {
    const used = {};
    for (const [role, pids] of Object.entries(after)) {
      used[role] = Object.entries(pids).reduce(
        (sum, [pid, ms]) => (ms === null ? sum : sum + ms - (before[role]?.[pid] ?? 0)),
        0,
      );
    }
    return used;
  }
}
