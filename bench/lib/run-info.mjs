// What a run records about itself, so its figures can be reproduced and compared: the command, the code
// and the machine.
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import process from 'node:process';

/** `script` preceded by the environment variables `keep` selects, as one command line. */
export function commandLine(script, keep) {
  const overrides = Object.keys(process.env)
    .filter(keep)
    .sort()
    .map((k) => `${k}=${process.env[k]}`);
  return [...overrides, script].join(' ');
}

/** The commit, and whether src/ has uncommitted changes (the built code may not match the commit). */
export function codeInfo() {
  const git = (...args) => execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    return { commit: git('rev-parse', '--short', 'HEAD'), dirty: git('status', '--porcelain', 'src').length > 0 };
  } catch {
    return { commit: 'unknown', dirty: false };
  }
}

/** The machine the run measured on, and its load average before the run. */
export function machineInfo() {
  return {
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    cpus: os.availableParallelism(),
    ramGb: os.totalmem() / 1024 ** 3,
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    loadBefore: os.loadavg()[0],
  };
}
