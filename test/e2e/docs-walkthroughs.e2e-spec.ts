import { spawn } from 'node:child_process';
import { globSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import type { AppConfig } from '../../src/core/config/config.js';
import { DEMO_API_KEY } from '../../src/workspaces/demo-seed.js';
import { waitFor } from '../support/receiver.js';
import { clearTestQueue, createTestDatabaseConfig, dropTestDatabase, freePort } from '../support/test-app.js';
import { missingOutput, parseWalkthrough, type Walkthrough } from '../support/walkthroughs.js';
import { ensureBuilt, spawnProcess, type WorkerProcess } from '../support/worker-process.js';

// Every page of the docs, the README included: a page added later is run without being listed here.
const PAGES = ['README.md', ...globSync('docs/**/*.md').sort()];
const PAGE_TIMEOUT_MS = 120_000;
const BLOCK_END = '@@walkthrough-block-end@@';

interface PageRun {
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/** Runs a page's blocks in one bash, in its own process group so that whatever it left running can be ended. */
async function runPage(walkthrough: Walkthrough, env: Record<string, string>): Promise<PageRun> {
  const dir = mkdtempSync(join(tmpdir(), 'walkthrough-'));
  const script = join(dir, 'page.sh');
  const marker = `printf '\\n%s\\n' '${BLOCK_END}'`;
  writeFileSync(script, ['set -eo pipefail', ...walkthrough.blocks.flatMap((b) => [b.code, marker])].join('\n'));
  const child = spawn('bash', [script], { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(child.pid!);
  }, PAGE_TIMEOUT_MS);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(timer);
  killGroup(child.pid!); // a receiver the page started in the background and did not stop
  rmSync(dir, { recursive: true, force: true });
  return { code, stdout, stderr, timedOut };
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // the group has ended already
  }
}

/** What went wrong on a page, with the block, what it printed and the shell's errors; null when nothing did. */
function pageFailure(page: string, walkthrough: Walkthrough, run: PageRun): string | null {
  const outputs = run.stdout.split(`\n${BLOCK_END}\n`);
  const tail = `stderr:\n${run.stderr.slice(-3000)}`;
  if (run.timedOut)
    return `${page}: still running after ${PAGE_TIMEOUT_MS / 1000} s\n${run.stdout.slice(-3000)}\n${tail}`;
  for (const [i, block] of walkthrough.blocks.entries()) {
    const ran = i < outputs.length - 1; // its end marker was printed
    const where = `${page}:${block.line}`;
    if (!ran)
      return `${where}: the block failed (exit code ${run.code})\n${block.code}\noutput:\n${outputs[i]}\n${tail}`;
    const missing = block.expected && missingOutput(block.expected, outputs[i]);
    if (missing) return `${where}: the output has no line\n  ${missing}\nin order; it printed:\n${outputs[i]}\n${tail}`;
  }
  if (run.code !== 0) return `${page}: bash exited with ${run.code}\n${tail}`;
  return null;
}

describe('the walkthroughs of the docs, against a started service', () => {
  let config: AppConfig;
  let api: WorkerProcess;
  let env: Record<string, string>;
  let apiUrl: string;

  beforeAll(async () => {
    ensureBuilt();
    config = await createTestDatabaseConfig();
    const port = await freePort();
    const metricsPort = await freePort();
    // As `npm start` runs it in development: the worker in the api, the demo workspace, private targets allowed.
    api = spawnProcess('dist/main.js', config, {
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      WORKER_ENABLED: 'true',
      SEED_DEMO: 'true',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    });
    apiUrl = `http://localhost:${port}/api/v1`;
    const ready = () =>
      fetch(`http://localhost:${port}/readyz`).then(
        (res) => res.ok,
        () => false,
      );
    await waitFor(async () => api.child.exitCode !== null || (await ready()), 60_000, 'the api to be ready');
    if (api.child.exitCode !== null) throw new Error(`the api exited: ${api.output()}`);
    env = {
      PATH: [dirname(process.execPath), process.env.PATH].join(delimiter),
      HOME: process.env.HOME ?? tmpdir(),
      // The service's own settings, so that the CLI a page runs reads the same database.
      NODE_ENV: 'test',
      DATABASE_URL: config.databaseUrl,
      REDIS_URL: config.redisUrl,
      QUEUE_PREFIX: config.queuePrefix,
      LOG_LEVEL: 'warn',
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      API: apiUrl,
      KEY: DEMO_API_KEY,
      RECEIVER_PORT: String(await freePort()),
    };
  }, 120_000);

  afterAll(async () => {
    if (api) {
      api.child.kill('SIGTERM');
      await api.exited;
    }
    if (config) {
      await clearTestQueue(config);
      await dropTestDatabase(config.databaseUrl);
    }
  });

  /** The demo workspace's webhooks and operational webhooks, removed so that each page starts from it alone. */
  async function removeLeftovers(): Promise<void> {
    for (const path of ['webhooks', 'operational-webhooks']) {
      const res = await fetch(`${apiUrl}/${path}`, { headers: { 'x-ac-api-key': DEMO_API_KEY } });
      const { data } = (await res.json()) as { data: { id: string }[] };
      for (const { id } of data) {
        await fetch(`${apiUrl}/${path}/${id}`, { method: 'DELETE', headers: { 'x-ac-api-key': DEMO_API_KEY } });
      }
    }
  }

  const runnable = PAGES.map((page) => [page, parseWalkthrough(readFileSync(page, 'utf8'), page)] as const).filter(
    ([, walkthrough]) => walkthrough.blocks.length > 0,
  );

  it('finds the pages with walkthroughs', () => {
    expect(runnable.map(([page]) => page)).toEqual(expect.arrayContaining(['README.md', 'docs/api/first-delivery.md']));
  });

  it.each(runnable)(
    '%s runs as written',
    async (page, walkthrough) => {
      // A fresh receiver port per page: a receiver killed with its page may hold the last one a moment.
      const run = await runPage(walkthrough, { ...env, RECEIVER_PORT: String(await freePort()) });
      await removeLeftovers();
      expect(pageFailure(page, walkthrough, run) ?? 'ran as written').toBe('ran as written');
    },
    PAGE_TIMEOUT_MS + 30_000,
  );
});
