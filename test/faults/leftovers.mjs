// Removes what an interrupted fault run left behind, as listed in test-results/faults/live.json by
// test/faults/support/leftovers.ts: its own processes (by pid), private Postgres servers, databases
// and queue keys. Synchronous, so that it can run in an exit handler.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const FILE = 'test-results/faults/live.json';
const SHARED_PG = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432';
const SHARED_REDIS = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

function pgCtl() {
  if (process.env.PG_BIN) return join(process.env.PG_BIN, 'pg_ctl');
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(a) - Number(b)) : [];
  return versions.length > 0 ? join(root, versions.at(-1), 'bin', 'pg_ctl') : 'pg_ctl';
}

const quietly = (fn) => {
  try {
    fn();
  } catch {
    // gone already
  }
};

const runNode = (script, args) =>
  execFileSync(process.execPath, ['--input-type=module', '-e', script, ...args], { stdio: 'ignore', timeout: 20_000 });

export function removeLeftovers() {
  if (!existsSync(FILE)) return;
  const left = JSON.parse(readFileSync(FILE, 'utf8'));
  for (const { pid, cmdline } of left.processes) {
    const path = `/proc/${pid}/cmdline`;
    const running = existsSync(path) ? readFileSync(path, 'utf8').split('\0').filter(Boolean).join(' ') : '';
    // Redis rewrites its title to "redis-server <host>:<port>".
    const port = /--port (\d+)/.exec(cmdline)?.[1];
    const same = running === cmdline || (port && /^redis-server \S*:(\d+)/.exec(running)?.[1] === port);
    if (same) quietly(() => process.kill(pid, 'SIGKILL'));
  }
  for (const dir of left.postgresDirs) {
    const data = join(dir, 'data');
    if (existsSync(join(data, 'postmaster.pid'))) {
      const args = ['-D', data, '-m', 'immediate', '-w', 'stop'];
      const root = process.getuid?.() === 0;
      quietly(() =>
        execFileSync(root ? 'runuser' : pgCtl(), root ? ['-u', 'postgres', '--', pgCtl(), ...args] : args, {
          stdio: 'ignore',
        }),
      );
    }
    rmSync(dir, { recursive: true, force: true });
  }
  for (const name of left.databases.filter((d) => /^cw_test_faults[0-9a-f]+$/.test(d))) {
    const script = `import pg from 'pg'; const c = new pg.Client({ connectionString: process.argv[1] });
      await c.connect(); await c.query('DROP DATABASE IF EXISTS "' + process.argv[2] + '" WITH (FORCE)'); await c.end();`;
    quietly(() => runNode(script, [`${SHARED_PG}/postgres`, name]));
  }
  for (const prefix of left.redisPrefixes.filter((p) => /^cwfaults-[0-9a-f]+$/.test(p))) {
    const script = `import { Redis } from 'ioredis'; const r = new Redis(process.argv[1]); let cursor = '0';
      do { const [next, keys] = await r.scan(cursor, 'MATCH', process.argv[2] + ':*', 'COUNT', 1000);
        if (keys.length) await r.del(...keys); cursor = next; } while (cursor !== '0'); r.disconnect();`;
    quietly(() => runNode(script, [SHARED_REDIS, prefix]));
  }
  rmSync(FILE, { force: true });
}
