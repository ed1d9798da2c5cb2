import { spawn } from 'node:child_process';
import { Webhook } from 'standardwebhooks';
import { reportFailure } from '../../src/cli/cli-error.js';
import { CliIo } from '../../src/cli/cli-io.js';
import {
  DEMO_API_KEY,
  DEMO_CALCULATORS,
  DEMO_WORKSPACE_ID,
  DEMO_WORKSPACE_NAME,
} from '../../src/workspaces/demo-seed.js';
import { client, registerWebhook, signingSecret } from '../support/management-api.js';
import { Receiver, waitFor } from '../support/receiver.js';
import { createCalculator, createTestApp, ISO_MS, type TestApp } from '../support/test-app.js';
import { ensureBuilt } from '../support/worker-process.js';

// nest-commander is CommonJS and requires @nestjs/core, an ES module: Jest allows that only once
// @nestjs/core is evaluated (by the imports above), so the CLI's own modules load here.
const { CommandTestFactory } = await import('nest-commander-testing');
const { CliModule } = await import('../../src/cli/cli.module.js');

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Whether the command read its configuration, the first step towards connecting. */
  configRead?: boolean;
}

const KEY_PATTERN = /^ack_[a-z0-9]{8}_[A-Za-z0-9_-]{43}$/;
const WORKSPACE_KEYS = ['createdAt', 'id', 'name', 'updatedAt'];
const SUBMISSION_KEYS = ['calculatorId', 'createdAt', 'data', 'finished', 'id', 'meta', 'updatedAt'];
const COMMANDS = [
  'workspace:create',
  'apikey:create',
  'apikey:list',
  'apikey:revoke',
  'calculator:create',
  'submission:create',
  'seed:demo',
  'workspace:list',
  'webhook:list',
];

describe('provisioning CLI', () => {
  let t: TestApp;

  beforeAll(async () => {
    // The in-process worker delivers what submission:create enqueues.
    t = await createTestApp({ WORKER_ENABLED: 'true' });
  });
  afterAll(async () => {
    await t?.close();
  });

  /** The environment an operator's shell would give the CLI, pointed at this file's database and queue. */
  const cliEnv = (env: Record<string, string> = {}): NodeJS.ProcessEnv => ({
    NODE_ENV: 'test',
    DATABASE_URL: t.config.databaseUrl,
    REDIS_URL: t.config.redisUrl,
    QUEUE_PREFIX: t.config.queuePrefix,
    ...env,
  });

  /**
   * Runs a command in this process as dist/cli.js would (nest-commander parses the arguments, the
   * command opens its own context), with the output and exit code captured instead of the process's.
   */
  async function cli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
    // createTestApp migrated this file's database; the spawned runs below cover the migration step.
    const processEnv = cliEnv({ MIGRATIONS_RUN: 'false', ...env });
    const run: Required<CliRun> = { code: 0, stdout: '', stderr: '', configRead: false };
    const io: CliIo = {
      get env() {
        run.configRead = true;
        return processEnv;
      },
      stdout: (text) => (run.stdout += text),
      stderr: (text) => (run.stderr += text),
    };
    const commands = await CommandTestFactory.createTestingCommand(
      { imports: [CliModule] },
      { serviceErrorHandler: (error) => void (run.code = reportFailure(error, io.stderr)) },
    )
      .overrideProvider(CliIo)
      .useValue(io)
      .compile();
    await CommandTestFactory.run(commands, ['node', 'cli.js', ...args]);
    return run;
  }

  async function cliJson(args: string[], env: Record<string, string> = {}): Promise<Record<string, unknown>> {
    const run = await cli([...args, '--json'], env);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout.endsWith('\n')).toBe(true);
    expect(run.stdout.trimEnd().split('\n')).toHaveLength(1);
    const parsed: unknown = JSON.parse(run.stdout);
    expect(parsed).toEqual(expect.any(Object));
    expect(Array.isArray(parsed)).toBe(false);
    return parsed as Record<string, unknown>;
  }

  async function newWorkspace(name = 'CLI workspace'): Promise<{ id: string; apiKey: string }> {
    const out = await cliJson(['workspace:create', '--name', name]);
    return { id: (out.workspace as { id: string }).id, apiKey: out.apiKey as string };
  }

  /**
   * Everything a command could write, to prove a refused command wrote nothing. Not api_keys.last_used_at:
   * the API writes it after answering a request, without waiting, so it may land during any test.
   */
  async function snapshot(): Promise<unknown> {
    const [row] = await t.dataSource.query(`
      SELECT (SELECT json_agg(w ORDER BY id) FROM workspaces w) AS workspaces,
             (SELECT json_agg(to_jsonb(k) - 'last_used_at' ORDER BY id) FROM api_keys k) AS api_keys,
             (SELECT json_agg(c ORDER BY id) FROM calculators c) AS calculators,
             (SELECT json_agg(s ORDER BY id) FROM submissions s) AS submissions,
             (SELECT json_agg(d ORDER BY id) FROM deliveries d) AS deliveries`);
    return row;
  }

  /** A bad command line (exit 64) is refused before the configuration is read: nothing connects. */
  async function expectRefused(args: string[], stderr: RegExp, code = 64): Promise<void> {
    const before = await snapshot();
    const runs = await Promise.all([cli(args), cli([...args, '--json'])]);
    for (const run of runs) {
      expect(run).toMatchObject({ code, stdout: '' });
      expect(run.stderr).toMatch(stderr);
      if (code === 64) expect(run.configRead).toBe(false);
    }
    expect(await snapshot()).toEqual(before);
  }

  const me = (key: string) => t.http().get('/api/v1/me').set('x-ac-api-key', key);

  describe('--help', () => {
    it('lists every command on stdout with exit 0', async () => {
      for (const args of [['--help'], ['-h'], ['help']]) {
        const run = await cli(args);
        expect(run).toMatchObject({ code: 0, stderr: '', configRead: false });
        expect(run.stdout).toContain('Usage: npm run cli -- <command> [options]');
        for (const command of COMMANDS) expect(run.stdout).toContain(command);
        expect(run.stdout).toContain('--json');
        expect(run.stdout).toMatch(/Exit codes: 0 done, 1 failed, 64 bad arguments.*, 78 bad configuration/);
      }
    });

    it("shows a command's options, required ones first in its usage line", async () => {
      for (const args of [
        ['calculator:create', '--help'],
        ['help', 'calculator:create'],
      ]) {
        const run = await cli(args);
        expect(run).toMatchObject({ code: 0, stderr: '' });
        expect(run.stdout).toContain(
          'Usage: npm run cli -- calculator:create --workspace <id> --name <name> [--status <status>] [--json]',
        );
        expect(run.stdout).toContain('--workspace <id>');
        expect(run.stdout).toContain('--status <status>');
        expect(run.stdout).toMatch(/--json +print exactly one JSON object on stdout/);
      }
    });

    it('prints the usage on stderr and exits 64 when no command is given', async () => {
      const run = await cli([]);
      expect(run).toMatchObject({ code: 64, stdout: '', configRead: false });
      expect(run.stderr).toContain('Usage:');
    });
  });

  describe('workspace:create', () => {
    it('prints exactly the workspace and its first key with --json; the key works on GET /me', async () => {
      const out = await cliJson(['workspace:create', '--name', 'Acme']);
      expect(Object.keys(out).sort()).toEqual(['apiKey', 'workspace']);
      const workspace = out.workspace as Record<string, string>;
      expect(Object.keys(workspace).sort()).toEqual(WORKSPACE_KEYS);
      expect(workspace.name).toBe('Acme');
      expect(workspace.createdAt).toMatch(ISO_MS);
      expect(workspace.updatedAt).toMatch(ISO_MS);
      expect(out.apiKey).toMatch(KEY_PATTERN);

      const res = await me(out.apiKey as string).expect(200);
      expect(res.body).toEqual(workspace);
    });

    it('prints a short human-readable result without --json', async () => {
      const run = await cli(['workspace:create', '--name', 'Human']);
      expect(run).toMatchObject({ code: 0, stderr: '' });
      expect(run.stdout).toMatch(/Created workspace "Human" \(id [a-z][a-z0-9]+\)/);
      const key = /ack_\S+/.exec(run.stdout)?.[0] ?? '';
      await me(key).expect(200);
    });

    it('stores the name trimmed', async () => {
      const out = await cliJson(['workspace:create', '--name', '  Padded  ']);
      expect((out.workspace as { name: string }).name).toBe('Padded');
    });

    it('accepts a name of exactly 255 characters', async () => {
      const out = await cliJson(['workspace:create', '--name', 'é'.repeat(255)]);
      expect((out.workspace as { name: string }).name).toBe('é'.repeat(255));
    });
  });

  describe('workspace:list', () => {
    it('lists every workspace with its counts of calculators and registered webhooks, oldest first', async () => {
      const { id, apiKey } = await newWorkspace('Listed, with things');
      const empty = await newWorkspace('Listed, empty');
      const calculators = await Promise.all([createCalculator(t, id), createCalculator(t, id)]);
      const api = client(t, apiKey);
      const kept = await registerWebhook(api, { url: 'https://example.com/a', calculators: [calculators[0].id] });
      const removed = await registerWebhook(api, { url: 'https://example.com/b', calculators: [calculators[1].id] });
      await api.delete(`/webhooks/${removed.id}`).expect(200);

      const out = await cliJson(['workspace:list']);
      expect(Object.keys(out)).toEqual(['data']);
      const listed = out.data as Record<string, unknown>[];
      for (const w of listed) {
        expect(Object.keys(w).sort()).toEqual(['calculators', 'createdAt', 'id', 'name', 'webhooks']);
        expect(w.createdAt).toMatch(ISO_MS);
      }
      const [rows] = await t.dataSource.query<[{ ids: string[] }]>(
        'SELECT array_agg(id ORDER BY created_at, id) AS ids FROM workspaces',
      );
      expect(listed.map((w) => w.id)).toEqual(rows.ids);
      expect(listed.find((w) => w.id === id)).toMatchObject({
        name: 'Listed, with things',
        calculators: 2,
        webhooks: 1,
      });
      expect(listed.find((w) => w.id === empty.id)).toMatchObject({
        name: 'Listed, empty',
        calculators: 0,
        webhooks: 0,
      });
      expect(kept.id).not.toBe(removed.id);
    });

    it('prints a table without --json', async () => {
      const { id } = await newWorkspace('Table workspace');
      const run = await cli(['workspace:list']);
      expect(run).toMatchObject({ code: 0, stderr: '' });
      const lines = run.stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^ID +NAME +CREATED +CALCULATORS +WEBHOOKS$/);
      expect(lines.find((line) => line.startsWith(id))).toMatch(/^\S+ +Table workspace +\S+Z +0 +0$/);
    });
  });

  describe('webhook:list', () => {
    it("lists the workspace's registered webhooks: id, name, url, calculators, state; never the secret", async () => {
      const { id, apiKey } = await newWorkspace();
      const other = await newWorkspace('Other');
      const [a, b] = await Promise.all([createCalculator(t, id), createCalculator(t, id)]);
      const api = client(t, apiKey);
      const first = await registerWebhook(api, {
        url: 'https://example.com/one',
        calculators: [a.id, b.id],
        name: 'One',
      });
      const second = await registerWebhook(api, { url: 'https://example.com/two', calculators: [b.id] });
      const removed = await registerWebhook(api, { url: 'https://example.com/gone', calculators: [a.id] });
      await api.delete(`/webhooks/${removed.id}`).expect(200);
      await t.dataSource.query(`UPDATE webhooks SET disabled_at = now(), disabled_reason = 'manual' WHERE id = $1`, [
        second.id,
      ]);
      const secret = await signingSecret(api, first.id);

      const out = await cliJson(['webhook:list', '--workspace', id]);
      expect(out).toEqual({
        data: [
          {
            id: first.id,
            name: 'One',
            url: 'https://example.com/one',
            calculators: [a.id, b.id].sort(),
            state: 'active',
          },
          { id: second.id, name: '', url: 'https://example.com/two', calculators: [b.id], state: 'disabled' },
        ],
      });
      const text = await cli(['webhook:list', '--workspace', id]);
      expect(text).toMatchObject({ code: 0, stderr: '' });
      const lines = text.stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^ID +NAME +URL +CALCULATORS +STATE$/);
      expect(lines[1]).toMatch(
        new RegExp(`^${first.id} +One +https://example.com/one +${[a.id, b.id].sort().join(',')} +active$`),
      );
      expect(lines[2]).toMatch(new RegExp(`^${second.id} +- +https://example.com/two +${b.id} +disabled$`));
      expect(lines).toHaveLength(3);
      for (const output of [JSON.stringify(out), text.stdout]) expect(output).not.toContain(secret);

      expect(await cliJson(['webhook:list', '--workspace', other.id])).toEqual({ data: [] });
      const none = await cli(['webhook:list', '--workspace', other.id]);
      expect(none.stdout).toBe(`Workspace ${other.id} has no webhooks.\n`);
    });
  });

  describe('apikey:create', () => {
    it('issues another working key, printed once with its prefix', async () => {
      const { id } = await newWorkspace();
      const out = await cliJson(['apikey:create', '--workspace', id]);
      expect(Object.keys(out).sort()).toEqual(['apiKey', 'createdAt', 'lastUsedAt', 'prefix', 'revokedAt']);
      expect(out.apiKey).toMatch(KEY_PATTERN);
      expect((out.apiKey as string).startsWith(`${out.prefix as string}_`)).toBe(true);
      expect(out.createdAt).toMatch(ISO_MS);
      const res = await me(out.apiKey as string).expect(200);
      expect(res.body.id).toBe(id);
    });

    it('prints the key without --json', async () => {
      const { id } = await newWorkspace();
      const run = await cli(['apikey:create', '--workspace', id]);
      expect(run.code).toBe(0);
      const key = /ack_\S+/.exec(run.stdout)?.[0] ?? '';
      expect(key).toMatch(KEY_PATTERN);
      await me(key).expect(200);
    });
  });

  describe('apikey:list', () => {
    it('shows prefixes and times, never a full key nor a hash', async () => {
      const { id, apiKey } = await newWorkspace();
      const second = (await cliJson(['apikey:create', '--workspace', id])).apiKey as string;
      await me(apiKey).expect(200);

      const out = await cliJson(['apikey:list', '--workspace', id]);
      expect(Object.keys(out)).toEqual(['data']);
      const keys = out.data as Record<string, string | null>[];
      expect(keys.map((k) => k.prefix)).toEqual([apiKey.slice(0, 12), second.slice(0, 12)]);
      for (const k of keys) {
        expect(Object.keys(k).sort()).toEqual(['createdAt', 'lastUsedAt', 'prefix', 'revokedAt']);
        expect(k.createdAt).toMatch(ISO_MS);
        expect(k.revokedAt).toBeNull();
      }

      const [{ key_hash: hash }] = await t.dataSource.query('SELECT key_hash FROM api_keys WHERE prefix = $1', [
        apiKey.slice(0, 12),
      ]);
      const text = await cli(['apikey:list', '--workspace', id]);
      expect(text.code).toBe(0);
      for (const output of [JSON.stringify(out), text.stdout]) {
        expect(output).not.toContain(apiKey);
        expect(output).not.toContain(second);
        expect(output).not.toContain(hash);
        expect(output).not.toMatch(/ack_[a-z0-9]{8}_/);
      }
      expect(text.stdout).toContain(apiKey.slice(0, 12));
    });

    it('shows when a key was last used', async () => {
      const { id, apiKey } = await newWorkspace();
      await me(apiKey).expect(200);
      // The guard records use without waiting for it.
      let lastUsedAt: unknown = null;
      for (let i = 0; i < 50 && lastUsedAt === null; i++) {
        await new Promise((r) => setTimeout(r, 20));
        [{ last_used_at: lastUsedAt }] = await t.dataSource.query(
          'SELECT last_used_at FROM api_keys WHERE prefix = $1',
          [apiKey.slice(0, 12)],
        );
      }
      const out = await cliJson(['apikey:list', '--workspace', id]);
      expect((out.data as { lastUsedAt: string }[])[0].lastUsedAt).toMatch(ISO_MS);
    });
  });

  describe('apikey:revoke', () => {
    it('revokes a key: its next request gets 401, the other keys keep working', async () => {
      const { id, apiKey } = await newWorkspace();
      const other = (await cliJson(['apikey:create', '--workspace', id])).apiKey as string;
      await me(apiKey).expect(200);

      const out = await cliJson(['apikey:revoke', '--workspace', id, '--prefix', apiKey.slice(0, 12)]);
      expect(Object.keys(out).sort()).toEqual(['createdAt', 'lastUsedAt', 'prefix', 'revokedAt']);
      expect(out.prefix).toBe(apiKey.slice(0, 12));
      expect(out.revokedAt).toMatch(ISO_MS);

      // The api hears of the revocation through LISTEN, within a second (as in auth.e2e-spec).
      await waitFor(async () => (await me(apiKey)).status === 401, 1_000, 'the 401');
      const res = await me(apiKey).expect(401);
      expect(res.body.error.code).toBe('not_authenticated');
      await me(other).expect(200);

      const list = await cliJson(['apikey:list', '--workspace', id]);
      expect((list.data as { revokedAt: string | null }[]).map((k) => k.revokedAt)).toEqual([out.revokedAt, null]);
    });

    it('refuses a key that is already revoked, writing nothing', async () => {
      const { id, apiKey } = await newWorkspace();
      const run = await cli(['apikey:revoke', '--workspace', id, '--prefix', apiKey.slice(0, 12)]);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('Revoked');
      await expectRefused(['apikey:revoke', '--workspace', id, '--prefix', apiKey.slice(0, 12)], /already revoked/, 1);
    });

    it("refuses an unknown prefix and another workspace's key, writing nothing", async () => {
      const a = await newWorkspace();
      const b = await newWorkspace();
      await expectRefused(['apikey:revoke', '--workspace', a.id, '--prefix', 'ack_00000000'], /no API key/, 1);
      await expectRefused(['apikey:revoke', '--workspace', a.id, '--prefix', b.apiKey.slice(0, 12)], /no API key/, 1);
      await me(b.apiKey).expect(200);
    });

    it('refuses a malformed prefix and a full key given as prefix', async () => {
      const { id, apiKey } = await newWorkspace();
      await expectRefused(['apikey:revoke', '--workspace', id, '--prefix', 'nope'], /--prefix must be a key prefix/);
      await expectRefused(['apikey:revoke', '--workspace', id, '--prefix', apiKey], /--prefix must be a key prefix/);
    });
  });

  describe('calculator:create', () => {
    it('prints the calculator exactly as GET /calculators shows it', async () => {
      const { id, apiKey } = await newWorkspace();
      const out = await cliJson(['calculator:create', '--workspace', id, '--name', 'Pricing']);
      const list = await t.http().get('/api/v1/calculators').set('x-ac-api-key', apiKey).expect(200);
      expect(list.body.data).toEqual([out]);
      expect(Object.keys(out)).toEqual(Object.keys(list.body.data[0]));
      expect(out).toMatchObject({ name: 'Pricing', status: 'draft', workspaceId: id, submissionsCount: 0 });
    });

    it('takes --status, and prints the same object as indented JSON without --json', async () => {
      const { id, apiKey } = await newWorkspace();
      const run = await cli(['calculator:create', '--workspace', id, '--name', 'Live', '--status', 'published']);
      expect(run).toMatchObject({ code: 0, stderr: '' });
      const list = await t.http().get('/api/v1/calculators').set('x-ac-api-key', apiKey).expect(200);
      expect(JSON.parse(run.stdout)).toEqual(list.body.data[0]);
      expect(list.body.data[0].status).toBe('published');
    });
  });

  describe('submission:create', () => {
    it("records a submission; the calculator's webhook receives it, signed", async () => {
      const receiver = await Receiver.start();
      try {
        const { id, apiKey } = await newWorkspace();
        const calculator = await cliJson(['calculator:create', '--workspace', id, '--name', 'Quote']);
        const auth = { 'x-ac-api-key': apiKey };
        const hook = await t
          .http()
          .post('/api/v1/webhooks')
          .set(auth)
          .send({ url: receiver.url, calculators: [calculator.id] })
          .expect(200);
        const webhookId = hook.body.data.id as string;
        const secret = await t.http().get(`/api/v1/webhooks/${webhookId}/secret`).set(auth).expect(200);

        const out = await cliJson([
          'submission:create',
          '--calculator',
          calculator.id as string,
          '--data',
          '{"answer":42,"email":"a@example.com"}',
          '--meta',
          '{"source":"cli"}',
        ]);
        expect(Object.keys(out).sort()).toEqual(SUBMISSION_KEYS);
        expect(out).toMatchObject({
          calculatorId: calculator.id,
          finished: true,
          data: { answer: 42, email: 'a@example.com' },
          meta: { source: 'cli' },
        });
        expect(out.createdAt).toMatch(ISO_MS);

        const request = await waitFor(() => receiver.requests[0], 15_000, 'the webhook');
        const payload = new Webhook(secret.body.data.key).verify(
          request.body,
          request.headers as Record<string, string>,
        );
        expect(payload).toEqual({ webhookId, event: 'newSubmission', data: out });

        const list = await t.http().get('/api/v1/calculators').set(auth).expect(200);
        expect(list.body.data[0]).toMatchObject({ submissionsCount: 1, lastSubmissionAt: out.createdAt });
      } finally {
        await receiver.close();
      }
    });

    it('takes --finished false, and prints indented JSON without --json', async () => {
      const { id } = await newWorkspace();
      const calculator = await cliJson(['calculator:create', '--workspace', id, '--name', 'Partial']);
      const args = [
        'submission:create',
        '--calculator',
        calculator.id as string,
        '--data',
        '{}',
        '--finished',
        'false',
      ];
      const run = await cli(args);
      expect(run).toMatchObject({ code: 0, stderr: '' });
      expect(JSON.parse(run.stdout)).toMatchObject({ finished: false, data: {}, meta: {} });
    });

    it('refuses an unknown calculator, bad JSON and a bad --finished, writing nothing', async () => {
      const { id } = await newWorkspace();
      const calculatorId = (await cliJson(['calculator:create', '--workspace', id, '--name', 'Target'])).id as string;
      const submit = ['submission:create', '--calculator', calculatorId];
      await Promise.all([
        expectRefused(
          ['submission:create', '--calculator', 'nosuchcalculator000000000', '--data', '{}'],
          /unknown calculator "nosuchcalculator000000000"/,
          1,
        ),
        expectRefused([...submit], /missing required option --data/),
        expectRefused([...submit, '--data', '{answer: 42}'], /--data is not valid JSON/),
        expectRefused([...submit, '--data', '[42]'], /--data must be a JSON object/),
        expectRefused([...submit, '--data', '{}', '--meta', 'null'], /--meta must be a JSON object/),
        expectRefused([...submit, '--data', '{}', '--finished', 'yes'], /--finished must be true or false/),
        expectRefused([...submit, '--data', '{"a":"\\u0000"}'], /must not contain NUL/, 1),
      ]);
    });
  });

  describe('seed:demo', () => {
    it('creates the demo workspace, three calculators and the documented key, once', async () => {
      const first = await cliJson(['seed:demo']);
      expect(first).toMatchObject({
        apiKey: DEMO_API_KEY,
        created: { workspace: true, calculators: 3, apiKey: true },
        apiKeyRevoked: false,
      });
      expect(first.workspace).toMatchObject({ id: DEMO_WORKSPACE_ID, name: DEMO_WORKSPACE_NAME });
      expect(DEMO_API_KEY).toMatch(KEY_PATTERN);

      const before = await snapshot();
      const second = await cliJson(['seed:demo']);
      expect(second).toMatchObject({ created: { workspace: false, calculators: 0, apiKey: false } });
      expect(second.workspace).toEqual(first.workspace);
      const text = await cli(['seed:demo']);
      expect(text.code).toBe(0);
      expect(text.stdout).toContain('nothing created');
      expect(text.stdout).toContain(`curl -H 'x-ac-api-key: ${DEMO_API_KEY}' http://localhost:`);
      expect(await snapshot()).toEqual(before);

      const res = await me(DEMO_API_KEY).expect(200);
      expect(res.body).toEqual(first.workspace);
      const calculators = await t.http().get('/api/v1/calculators').set('x-ac-api-key', DEMO_API_KEY).expect(200);
      expect(calculators.body.data.map((c: { id: string; name: string }) => ({ id: c.id, name: c.name }))).toEqual(
        DEMO_CALCULATORS,
      );
    });

    it('is refused with NODE_ENV=production, before touching the database', async () => {
      const before = await snapshot();
      const run = await cli(['seed:demo', '--json'], { NODE_ENV: 'production' });
      expect(run).toMatchObject({ code: 1, stdout: '' });
      expect(run.stderr).toMatch(/development only.*NODE_ENV=production/);
      expect(await snapshot()).toEqual(before);
    });
  });

  describe('bad arguments: a message on stderr, a non-zero exit, nothing written', () => {
    let workspaceId: string;
    beforeAll(async () => {
      workspaceId = (await newWorkspace('Bad arguments')).id;
    });

    it('refuses an unknown command', () => expectRefused(['workspace:destroy'], /unknown command "workspace:destroy"/));

    it('refuses a missing required option', async () => {
      await expectRefused(['workspace:create'], /missing required option --name/);
      await expectRefused(['calculator:create', '--name', 'x'], /missing required option --workspace/);
      await expectRefused(['apikey:revoke', '--workspace', workspaceId], /missing required option --prefix/);
      await expectRefused(['webhook:list'], /missing required option --workspace/);
      await expectRefused(['webhook:list', '--workspace', '  '], /--workspace must not be empty/);
      await expectRefused(['workspace:list', 'extra'], /Unexpected argument 'extra'/);
    });

    it('refuses an option without its value', () =>
      expectRefused(['workspace:create', '--name'], /option --name needs a value/));

    it('refuses an unknown option and a stray argument', async () => {
      await expectRefused(['workspace:create', '--name', 'x', '--colour', 'red'], /Unknown option '--colour'/);
      await expectRefused(['workspace:create', '--name', 'x', 'extra'], /Unexpected argument 'extra'/);
    });

    it('refuses an option given twice', async () => {
      await expectRefused(['workspace:create', '--name', 'a', '--name', 'b'], /--name is given more than once/);
      await expectRefused(['workspace:create', '--name', 'a', '--json', '--json'], /--json is given more than once/);
    });

    it('refuses an empty or blank name', async () => {
      await expectRefused(['workspace:create', '--name', ''], /--name must not be empty/);
      await expectRefused(
        ['calculator:create', '--workspace', workspaceId, '--name', '   '],
        /--name must not be empty/,
      );
    });

    it('refuses a name over 255 characters', async () => {
      await expectRefused(['workspace:create', '--name', 'x'.repeat(256)], /--name must be at most 255 characters/);
      await expectRefused(
        ['calculator:create', '--workspace', workspaceId, '--name', 'é'.repeat(256)],
        /--name must be at most 255 characters/,
      );
    });

    it('refuses a name with control characters', () =>
      expectRefused(['workspace:create', '--name', 'a\u0007b'], /control characters/));

    it('refuses a bad --status', () =>
      expectRefused(
        ['calculator:create', '--workspace', workspaceId, '--name', 'x', '--status', 'archived'],
        /--status must be one of draft, published/,
      ));

    it('refuses an unknown workspace id', async () => {
      const unknown = ['--workspace', 'nosuchworkspace0000000000'];
      for (const args of [
        ['apikey:create', ...unknown],
        ['apikey:list', ...unknown],
        ['apikey:revoke', ...unknown, '--prefix', 'ack_00000000'],
        ['calculator:create', ...unknown, '--name', 'x'],
        ['webhook:list', ...unknown],
      ]) {
        await expectRefused(args, /unknown workspace "nosuchworkspace0000000000"/, 1);
      }
    });

    it('refuses bad configuration with exit 78, naming the variable', async () => {
      const run = await cli(['workspace:create', '--name', 'x', '--json'], { DATABASE_URL: 'mysql://nope' });
      expect(run).toMatchObject({ code: 78, stdout: '' });
      expect(run.stderr).toContain('DATABASE_URL');
    });
  });

  describe('dist/cli.js, as an operator runs it', () => {
    beforeAll(() => ensureBuilt(), 180_000);

    function spawnCli(args: string[]): Promise<CliRun> {
      return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, ['dist/cli.js', ...args], {
          env: { PATH: process.env.PATH, ...cliEnv() },
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        child.on('error', reject);
        child.on('close', (code) => resolve({ code, stdout, stderr }));
      });
    }

    it('lists every command on stdout with exit 0', async () => {
      const run = await spawnCli(['--help']);
      expect(run).toMatchObject({ code: 0, stderr: '' });
      for (const command of COMMANDS) expect(run.stdout).toContain(command);
    });

    it('creates a workspace with --json: one JSON line, a working key, and the process ends by itself', async () => {
      const run = await spawnCli(['workspace:create', '--name', 'Spawned', '--json']);
      expect(run).toMatchObject({ code: 0, stderr: '' });
      expect(run.stdout.trimEnd().split('\n')).toHaveLength(1);
      const out = JSON.parse(run.stdout) as { workspace: Record<string, string>; apiKey: string };
      expect(Object.keys(out).sort()).toEqual(['apiKey', 'workspace']);
      expect(out.workspace.name).toBe('Spawned');
      const res = await me(out.apiKey).expect(200);
      expect(res.body).toEqual(out.workspace);
    });

    it('refuses an unknown option with exit 64 and its message, writing nothing', async () => {
      const before = await snapshot();
      const run = await spawnCli(['workspace:create', '--name', 'x', '--colour', 'red']);
      expect(run).toMatchObject({ code: 64, stdout: '' });
      expect(run.stderr).toBe(
        `Error: Unknown option '--colour'; run "npm run cli -- workspace:create --help" for its options\n`,
      );
      expect(await snapshot()).toEqual(before);
    });
  });
});
