import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { forget, remember } from './leftovers.js';

const OUTPUT_LIMIT = 256 * 1024;

/** A child process whose output is kept (the last 256 KiB) for the failure message. */
export class ServiceProcess {
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private log = '';

  private constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    const keep = (chunk: Buffer) => {
      this.log += chunk.toString();
      if (this.log.length > OUTPUT_LIMIT) this.log = this.log.slice(-OUTPUT_LIMIT / 2);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    const entry = { pid: child.pid!, cmdline: child.spawnargs.join(' ') };
    remember('processes', entry);
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        forget('processes', entry);
        resolve({ code, signal });
      }),
    );
  }

  static spawn(name: string, cwd: string, command: string, args: string[], env: Record<string, string>) {
    const child = spawn(command, args, {
      cwd,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new ServiceProcess(name, child);
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** CPU time used so far (user + system, ms; 0 where /proc is not there). */
  cpuMs(): number {
    const stat = `/proc/${this.child.pid}/stat`;
    if (!existsSync(stat)) return 0;
    const fields = readFileSync(stat, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10; // utime, stime in ticks of 10 ms
  }

  output(): string {
    return this.log;
  }

  /** Sends the signal and waits for the exit. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.alive) this.child.kill(signal);
    await this.exited;
  }
}
