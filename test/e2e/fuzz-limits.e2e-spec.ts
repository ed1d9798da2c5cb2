import fc from 'fast-check';
import net from 'node:net';
import { gzipSync } from 'node:zlib';
import { BODY_LIMIT_BYTES, SUBMISSION_BODY_LIMIT_BYTES } from '../../src/core/http/json-body.interceptor.js';
import { LINGER_MS, MAX_JSON_DEPTH } from '../../src/core/security/body-limit.js';
import {
  closeAgent,
  contractViolation,
  listen,
  rawRequest,
  snapshotDatabase,
  type RawRequest,
  type RawResponse,
} from '../support/hostile-input.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

const FIFTY_MIB = 50 * 1024 * 1024;

/** `prefix` + padding + `suffix`, exactly `size` bytes: valid JSON whatever the size. */
const padded = (prefix: string, suffix: string, size: number, pad = ' ') =>
  prefix + pad.repeat(size - Buffer.byteLength(prefix + suffix)) + suffix;

interface EarlyAnswer {
  head: string;
  body: string;
  /** Body bytes that had left the client when the first byte of the answer came back. */
  sentBeforeAnswer: number;
  /** The server closed the connection while the client still had body to send. */
  closedEarly: boolean;
}

describe('fuzz: sizes and nesting', () => {
  let t: TestApp;
  let port: number;
  let key: string;
  let calculatorId: string;
  let webhooksPath: string;
  let submissionsPath: string;

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_PER_MINUTE: '0', MAX_WEBHOOKS_PER_WORKSPACE: '100000' });
    port = await listen(t);
    const own = await createWorkspace(t);
    key = own.key;
    calculatorId = (await createCalculator(t, own.workspace.id)).id;
    webhooksPath = '/api/v1/webhooks';
    submissionsPath = `/api/v1/calculators/${calculatorId}/submissions`;
  });
  afterAll(async () => {
    closeAgent();
    await t.close();
  });

  const json = (path: string, body: string | Buffer, headers: Record<string, string> = {}): RawRequest => ({
    method: 'POST',
    path,
    headers: { 'x-ac-api-key': key, 'content-type': 'application/json', ...headers },
    body,
  });

  async function send(req: RawRequest): Promise<RawResponse> {
    const before = await snapshotDatabase(t);
    const res = await rawRequest(port, req);
    expect(contractViolation(req, res)).toBeNull();
    if (res.status >= 400) expect(await snapshotDatabase(t)).toEqual(before);
    return res;
  }

  const webhookBody = (size: number) =>
    padded(`{"url":"https://receiver.example.com/h","calculators":["${calculatorId}"]`, '}', size);
  const submissionBody = (size: number) => padded('{"data":{"pad":"', '"}}', size, 'x');

  describe.each([
    ['POST /webhooks', () => webhooksPath, webhookBody, BODY_LIMIT_BYTES],
    ['POST /calculators/{id}/submissions', () => submissionsPath, submissionBody, SUBMISSION_BODY_LIMIT_BYTES],
  ])('%s', (_name, path, body, limit) => {
    it(`accepts a body of exactly the limit, and answers one byte more with 413, sized or chunked`, async () => {
      expect((await send(json(path(), body(limit)))).status).toBe(200);
      expect((await send(json(path(), body(limit + 1)))).status).toBe(413);
      expect((await send(json(path(), body(limit), { 'transfer-encoding': 'chunked' }))).status).toBe(200);
      expect((await send(json(path(), body(limit + 1), { 'transfer-encoding': 'chunked' }))).status).toBe(413);
    });

    it('answers sizes around the limit with 200 up to it and 413 past it', async () => {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: limit - 256, max: limit + 256 }), fc.boolean(), async (size, chunked) => {
          const headers: Record<string, string> = chunked ? { 'transfer-encoding': 'chunked' } : {};
          const res = await send(json(path(), body(size), headers));
          expect(res.status).toBe(size <= limit ? 200 : 413);
        }),
        { numRuns: 16 },
      );
    });

    it('answers a gzip body that inflates past the limit with 413', async () => {
      const bomb = gzipSync(body(limit * 8));
      expect(bomb.length).toBeLessThan(limit);
      expect((await send(json(path(), bomb, { 'content-encoding': 'gzip' }))).status).toBe(413);
    });

    it('refuses a content encoding it does not know, or a body that is not what it says, with 400', async () => {
      for (const encoding of ['x-unknown', 'compress', 'gzip, gzip']) {
        expect((await send(json(path(), body(100), { 'content-encoding': encoding }))).status).toBe(400);
      }
      expect((await send(json(path(), body(100), { 'content-encoding': 'gzip' }))).status).toBe(400);
    });

    describe('an oversize body is answered before it has been sent, and the connection closes', () => {
      /** Writes the request head, then the body at a steady pace, until the server answers. */
      async function streamOversize(mode: 'sized' | 'chunked'): Promise<EarlyAnswer> {
        const socket = net.connect(port, '127.0.0.1');
        await new Promise((resolve) => socket.once('connect', resolve));
        const framing = mode === 'sized' ? `content-length: ${FIFTY_MIB}` : 'transfer-encoding: chunked';
        socket.write(
          `POST ${path()} HTTP/1.1\r\nhost: localhost\r\nx-ac-api-key: ${key}\r\n` +
            `content-type: application/json\r\n${framing}\r\n\r\n`,
        );
        let answer = '';
        let sentBeforeAnswer = -1;
        let closed = false;
        socket.on('data', (data: Buffer) => {
          if (sentBeforeAnswer < 0) sentBeforeAnswer = socket.bytesWritten - socket.writableLength;
          answer += data.toString('latin1');
        });
        socket.on('error', () => undefined); // the server may reset once it has stopped reading
        const closedPromise = new Promise<void>((resolve) => socket.once('close', () => resolve(void (closed = true))));
        const chunk = Buffer.alloc(16 * 1024, 'a');
        let queued = 0;
        // Only the start of a sized body is sent: the answer must not wait for the rest.
        const budget = mode === 'sized' ? 64 * 1024 : FIFTY_MIB;
        while (sentBeforeAnswer < 0 && !closed && queued < budget) {
          const framed =
            mode === 'chunked' ? Buffer.concat([Buffer.from('4000\r\n'), chunk, Buffer.from('\r\n')]) : chunk;
          if (!socket.write(framed)) await new Promise((resolve) => socket.once('drain', resolve));
          queued += chunk.length;
          await new Promise((resolve) => setTimeout(resolve, 1));
        }
        const deadline = new Promise((resolve) => setTimeout(resolve, LINGER_MS + 3000));
        await Promise.race([closedPromise, deadline]);
        socket.destroy();
        const [head, body = ''] = answer.split('\r\n\r\n');
        return { head, body, sentBeforeAnswer, closedEarly: closed };
      }

      it.each(['sized', 'chunked'] as const)('%s', async (mode) => {
        const before = await snapshotDatabase(t);
        const answer = await streamOversize(mode);
        expect(answer.head).toMatch(/^HTTP\/1\.1 413 /);
        expect(answer.head).toMatch(/\r\nconnection: close\r\n/i);
        expect(answer.body).toContain('"code":"payload_too_large"');
        // Sized: the server answered from the header alone; chunked: once the limit was passed.
        expect(answer.sentBeforeAnswer).toBeGreaterThanOrEqual(0);
        expect(answer.sentBeforeAnswer).toBeLessThan(mode === 'sized' ? 64 * 1024 + 1 : limit + 4 * 1024 * 1024);
        expect(answer.closedEarly).toBe(true);
        expect(await snapshotDatabase(t)).toEqual(before);
      });
    });
  });

  describe(`nesting (at most ${MAX_JSON_DEPTH} levels)`, () => {
    const nestedArrays = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const nestedObjects = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

    it.each([
      ['arrays', nestedArrays],
      ['objects', nestedObjects],
    ])('accepts submission answers nested %s up to the limit and refuses deeper ones with 400', async (_kind, nest) => {
      // The body object and `data` are two levels.
      expect((await send(json(submissionsPath, `{"data":{"x":${nest(MAX_JSON_DEPTH - 2)}}}`))).status).toBe(200);
      expect((await send(json(submissionsPath, `{"data":{"x":${nest(MAX_JSON_DEPTH - 1)}}}`))).status).toBe(400);
    });

    it('answers any nesting depth, up to what fits in the body limits, with 200 or a documented 4xx', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 120_000 }),
          fc.constantFrom(nestedArrays, nestedObjects),
          fc.constantFrom('webhooks', 'submissions'),
          async (depth, nest, target) => {
            const res =
              target === 'webhooks'
                ? await send(json(webhooksPath, `{"url":"https://r.example.com","calculators":${nest(depth)}}`))
                : await send(json(submissionsPath, `{"data":{"x":${nest(depth)}}}`));
            expect(res.status).toBeLessThan(500);
          },
        ),
        { numRuns: 40 },
      );
    });
  });

  it('answers a request line or headers the HTTP parser refuses with a JSON 4xx, and keeps serving', async () => {
    const raw = async (text: string) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      let answer = '';
      socket.on('data', (data: Buffer) => (answer += data.toString('latin1')));
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write(text);
      await new Promise((resolve) => {
        socket.once('close', resolve);
        setTimeout(resolve, 2000);
      });
      socket.destroy();
      return answer;
    };
    const answers = [
      await raw(`GET /api/v1/me HTTP/1.1\r\nhost: x\r\nx-ac-api-key: ${'k'.repeat(20_000)}\r\n\r\n`),
      await raw('GET /api/v1/me HTTP/1.1\r\nhost: x\r\nbad header\r\n\r\n'),
      await raw('NOT-A-METHOD /api/v1/me HTTP/1.1\r\nhost: x\r\n\r\n'),
      await raw(`POST ${webhooksPath} HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\ncontent-length: 20\r\n\r\n`),
      await raw(`POST ${webhooksPath} HTTP/1.1\r\nhost: x\r\ncontent-length: -1\r\n\r\n`),
      await raw(`POST ${webhooksPath} HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n`),
      await raw(
        `POST ${webhooksPath} HTTP/1.1\r\nhost: x\r\nx-ac-api-key: ${key}\r\ncontent-type: application/json\r\n` +
          'transfer-encoding: chunked\r\n\r\n2\r\n{"\r\nzz\r\n',
      ),
    ];
    for (const answer of answers) {
      const [head, rest] = answer.split(/\r\n\r\n([^]*)/);
      const body = rest.slice(0, Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1]));
      expect(head).toMatch(/^HTTP\/1\.1 4\d\d /);
      expect(head).toMatch(/\r\ncontent-type: application\/json/i);
      const parsed = JSON.parse(body);
      expect(Object.keys(parsed)).toEqual(['error']);
      expect(parsed.error).toEqual(expect.objectContaining({ code: expect.any(String), message: expect.any(String) }));
    }
    expect(answers[0]).toMatch(/^HTTP\/1\.1 431 [^]*"code":"payload_too_large"/);
    expect((await rawRequest(port, { method: 'GET', path: '/healthz' })).status).toBe(200);
  });
});
