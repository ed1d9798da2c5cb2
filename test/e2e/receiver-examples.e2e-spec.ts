import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { signPayload } from '../../src/delivery/engine/signing.js';
import { setupWebhook, submit, useFastDeliveryApp } from '../support/delivery.js';
import { waitFor, type ReceivedRequest } from '../support/receiver.js';
import type { TestApp } from '../support/test-app.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
// Inside the repository (and ignored by git), so the TypeScript example resolves standardwebhooks.
const WORK_DIR = join(ROOT, 'test-results', 'receiver-examples');

/** The fenced code blocks of docs/delivery.md's "Verifying deliveries" section, by language. */
function documentedExamples(): Record<string, string> {
  const page = readFileSync(join(ROOT, 'docs', 'delivery.md'), 'utf8');
  const start = page.indexOf('\n## Verifying deliveries\n');
  if (start === -1) throw new Error('docs/delivery.md has no "Verifying deliveries" section');
  const end = page.indexOf('\n## ', start + 1);
  const section = page.slice(start, end === -1 ? undefined : end);
  return Object.fromEntries([...section.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map(([, lang, code]) => [lang, code]));
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

interface RunningExample {
  url: string;
  output: () => string;
  stop: () => void;
}

/** Starts the example as its page says (`WEBHOOK_SECRET=... PORT=... <run it>`), once it says it listens. */
async function startExample(command: string, file: string, secret: string): Promise<RunningExample> {
  const port = await freePort();
  const child: ChildProcess = spawn(command, [file], {
    env: { PATH: process.env.PATH, WEBHOOK_SECRET: secret, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await waitFor(() => output.includes(`listening on ${port}`) || child.exitCode !== null, 15_000, `${file} to listen`);
  if (child.exitCode !== null) throw new Error(`${file} exited: ${output}`);
  return { url: `http://127.0.0.1:${port}/hook`, output: () => output, stop: () => void child.kill() };
}

/** Sends a delivery as the service sent it (or altered): the example's status. */
async function deliver(url: string, headers: Record<string, string>, body: string): Promise<number> {
  const res = await fetch(url, { method: 'POST', headers, body });
  return res.status;
}

const deliveryHeaders = (request: ReceivedRequest): Record<string, string> => ({
  'content-type': String(request.headers['content-type']),
  'webhook-id': String(request.headers['webhook-id']),
  'webhook-timestamp': String(request.headers['webhook-timestamp']),
  'webhook-signature': String(request.headers['webhook-signature']),
});

describe('docs/delivery.md "Verifying deliveries" receiver examples', () => {
  const env = useFastDeliveryApp();
  const examples = documentedExamples();
  const running: RunningExample[] = [];
  let t: TestApp;
  let secret: string;
  let delivered: ReceivedRequest;

  beforeAll(async () => {
    t = env.t;
    // A real signed delivery from the service, captured by a receiver standing in for the user's.
    const capture = await env.startReceiver();
    const setup = await setupWebhook(t, capture.url);
    secret = setup.secret;
    const submission = await submit(setup.api, setup.calculator.id, { data: { answer: 42, text: 'héllo 😀' } });
    delivered = await waitFor(() => capture.requests[0], 5000, 'the delivery');
    expect(JSON.parse(delivered.body).data.id).toBe(submission.id);
  });
  afterEach(() => running.splice(0).forEach((example) => example.stop()));

  it('has a TypeScript, a Python and a Go example', () => {
    expect(Object.keys(examples).sort()).toEqual(['go', 'python', 'ts']);
    expect(examples.go).toContain('hmac.Equal');
    expect(examples.go).toContain('strings.Split(header.Get("webhook-signature"), " ")');
  });

  describe.each([
    ['TypeScript', 'ts', 'receiver.ts', process.execPath],
    ['Python', 'python', 'receiver.py', 'python3'],
  ])('%s', (_name, lang, fileName, command) => {
    let file: string;
    beforeAll(() => {
      mkdirSync(join(WORK_DIR, lang), { recursive: true });
      file = join(WORK_DIR, lang, fileName);
      writeFileSync(file, examples[lang]);
    });

    const start = async (key: string) => {
      const example = await startExample(command, file, key);
      running.push(example);
      return example;
    };

    it('accepts the real delivery, and one signed with two keys (rotation overlap) where the second matches', async () => {
      const example = await start(secret);
      const headers = deliveryHeaders(delivered);
      expect(await deliver(example.url, headers, delivered.body)).toBe(204);

      const overlap = { ...headers, 'webhook-signature': `v1,${'A'.repeat(43)}= ${headers['webhook-signature']}` };
      expect(await deliver(example.url, overlap, delivered.body)).toBe(204);
      const submissionId = JSON.parse(delivered.body).data.id as string;
      expect(example.output()).toContain(`verified newSubmission ${submissionId}`);
    });

    it('rejects a tampered body, a wrong secret, an old timestamp and a missing signature', async () => {
      const example = await start(secret);
      const headers = deliveryHeaders(delivered);
      const tampered = delivered.body.replace('"answer":42', '"answer":43');
      expect(tampered).not.toBe(delivered.body);
      expect(await deliver(example.url, headers, tampered)).toBe(401);

      const old = Math.floor(Date.now() / 1000) - 10 * 60;
      const oldHeaders = signPayload([secret], headers['webhook-id'], old, delivered.body);
      expect(await deliver(example.url, { ...headers, ...oldHeaders }, delivered.body)).toBe(401);
      const fresh = signPayload([secret], headers['webhook-id'], Math.floor(Date.now() / 1000), delivered.body);
      expect(await deliver(example.url, { ...headers, ...fresh }, delivered.body)).toBe(204); // the same signer, now

      const unsigned = Object.fromEntries(Object.entries(headers).filter(([name]) => name !== 'webhook-signature'));
      expect(await deliver(example.url, unsigned, delivered.body)).toBe(401);

      const wrongSecret = await start(`whsec_${Buffer.alloc(24, 7).toString('base64')}`);
      expect(await deliver(wrongSecret.url, headers, delivered.body)).toBe(401);
    });
  });
});
