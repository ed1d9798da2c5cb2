import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forget, remember } from './leftovers.js';
import { freePort } from './ports.js';

/** The newest installed server's bin folder (Debian layout), or the PATH; PG_BIN overrides. */
function postgresBin(tool: string): string {
  if (process.env.PG_BIN) return join(process.env.PG_BIN, tool);
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', tool)))
        .sort((a, b) => Number(a) - Number(b))
    : [];
  return versions.length > 0 ? join(root, versions.at(-1)!, 'bin', tool) : tool;
}

const isRoot = () => process.getuid?.() === 0;

/** Postgres refuses to run as root: as root, run its tools as the postgres user. */
function commandLine(tool: string, args: string[]): [string, string[]] {
  return isRoot() ? ['runuser', ['-u', 'postgres', '--', postgresBin(tool), ...args]] : [postgresBin(tool), args];
}

// Asynchronous: the receivers and the submission stream share this process and must keep running.
async function run(tool: string, args: string[]): Promise<void> {
  await promisify(execFile)(...commandLine(tool, args), { timeout: 60_000 });
}

/**
 * A throw-away Postgres cluster on its own port, so a scenario can stop and start it without
 * touching the shared server. fsync is off: the process is killed, never the machine.
 */
export class PrivatePostgres {
  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  static async create(): Promise<PrivatePostgres> {
    const dir = mkdtempSync(join(tmpdir(), 'cw-faults-pg-'));
    remember('postgresDirs', dir);
    const server = new PrivatePostgres(dir, await freePort());
    try {
      if (isRoot()) {
        const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
        const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
        chownSync(dir, uid, gid);
      }
      await run('initdb', ['-D', server.dataDir, '-A', 'trust', '-U', 'postgres', '--no-sync']);
      await server.start();
      return server;
    } catch (error) {
      server.destroy();
      throw error;
    }
  }

  private get dataDir(): string {
    return join(this.dir, 'data');
  }

  url(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  async start(): Promise<void> {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
    await run('pg_ctl', [
      '-D',
      this.dataDir,
      '-o',
      options,
      '-l',
      join(this.dir, 'postgres.log'),
      '-w',
      '-t',
      '60',
      'start',
    ]);
  }

  /** Immediate shutdown: every backend is killed at once, as in a crash (recovery runs at the next start). */
  async stop(): Promise<void> {
    await run('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', 'stop']);
  }

  /** Stops the server if it runs and removes its files; safe to call twice, and from an exit handler. */
  destroy(): void {
    if (existsSync(join(this.dataDir, 'postmaster.pid'))) {
      try {
        execFileSync(...commandLine('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', 'stop']), {
          stdio: 'ignore',
        });
      } catch {
        // already down
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
    forget('postgresDirs', this.dir);
  }
}
