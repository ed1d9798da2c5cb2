import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

// Small limits so the test runs in seconds; the defaults (10 s, 30 s, 5 s) are in the config spec.
const HEADERS_MS = 1000;
const REQUEST_MS = 2000;
const KEEP_ALIVE_MS = 500;
// Node finds a late request on a sweep (applyServerTimeouts: a quarter of HEADERS_MS here), then answers 408.
const SWEEP_SLACK_MS = 250 + 500;
const SLOW_CLIENTS = 20;

interface Trickle {
  /** When the server closed the connection, in ms after it opened; undefined while open. */
  closedAfter: Promise<number>;
  answer: () => string;
  stop: () => void;
}

/** Opens a connection, writes `head` at once, then `trickled` one byte a second until the server closes it. */
async function trickle(port: number, head: string, trickled: string): Promise<Trickle> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  const opened = performance.now();
  let answer = '';
  socket.on('data', (data: Buffer) => (answer += data.toString('latin1')));
  socket.on('error', () => undefined); // a reset once the server has given up on it
  socket.write(head);
  let next = 0;
  const timer = setInterval(() => {
    if (next < trickled.length && socket.writable) socket.write(trickled[next++]);
  }, 1000);
  const closedAfter = new Promise<number>((resolve) =>
    socket.once('close', () => {
      clearInterval(timer);
      resolve(performance.now() - opened);
    }),
  );
  return {
    closedAfter,
    answer: () => answer,
    stop: () => {
      clearInterval(timer);
      socket.destroy();
    },
  };
}

describe('slow clients (HTTP_HEADERS_TIMEOUT_MS, HTTP_REQUEST_TIMEOUT_MS, HTTP_KEEP_ALIVE_TIMEOUT_MS)', () => {
  let t: TestApp;
  let port: number;
  let key: string;
  let calculatorId: string;
  const open: Trickle[] = [];

  beforeAll(async () => {
    t = await createTestApp({
      HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
      HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_MS),
      HTTP_KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_MS),
    });
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as AddressInfo).port;
    const created = await createWorkspace(t);
    key = created.key;
    calculatorId = (await createCalculator(t, created.workspace.id)).id;
  });
  afterEach(() => {
    for (const connection of open.splice(0)) connection.stop();
  });
  afterAll(() => t.close());

  /** Ordinary requests, one after another, for as long as `until` is pending; each must answer 200 at once. */
  async function keepAsking(until: Promise<unknown>): Promise<number[]> {
    let done = false;
    void until.finally(() => (done = true));
    const latencies: number[] = [];
    while (!done) {
      const started = performance.now();
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/me`, { headers: { 'x-ac-api-key': key } });
      expect(res.status).toBe(200);
      await res.json();
      latencies.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return latencies;
  }

  it('cuts clients trickling their headers a byte a second with a 408, while answering the others', async () => {
    const slow = await Promise.all(
      Array.from({ length: SLOW_CLIENTS }, () =>
        trickle(port, `GET /api/v1/me HTTP/1.1\r\nhost: localhost\r\n`, `x-ac-api-key: ${key}\r\n\r\n`),
      ),
    );
    open.push(...slow);
    const cut = Promise.all(slow.map((s) => s.closedAfter));
    const latencies = await keepAsking(cut);

    for (const closedAfter of await cut) {
      expect(closedAfter).toBeGreaterThanOrEqual(HEADERS_MS - 50);
      expect(closedAfter).toBeLessThan(HEADERS_MS + SWEEP_SLACK_MS);
    }
    for (const s of slow) {
      expect(s.answer()).toMatch(/^HTTP\/1\.1 408 /);
      expect(s.answer()).toContain('"code":"bad_request"');
    }
    expect(latencies.length).toBeGreaterThanOrEqual(3);
    expect(Math.max(...latencies)).toBeLessThan(500);
  });

  it('cuts clients trickling their body a byte a second with a 408, while answering the others', async () => {
    const body = JSON.stringify({ data: { answer: 42 } });
    const head =
      `POST /api/v1/calculators/${calculatorId}/submissions HTTP/1.1\r\nhost: localhost\r\nx-ac-api-key: ${key}\r\n` +
      `content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`;
    const slow = await Promise.all(Array.from({ length: SLOW_CLIENTS }, () => trickle(port, head, body)));
    open.push(...slow);
    const cut = Promise.all(slow.map((s) => s.closedAfter));
    const latencies = await keepAsking(cut);

    // The headers came at once: the request's limit, not the headers', cuts these.
    for (const closedAfter of await cut) {
      expect(closedAfter).toBeGreaterThanOrEqual(REQUEST_MS - 50);
      expect(closedAfter).toBeLessThan(REQUEST_MS + SWEEP_SLACK_MS);
    }
    for (const s of slow) expect(s.answer()).toMatch(/^HTTP\/1\.1 408 /);
    expect(latencies.length).toBeGreaterThanOrEqual(5);
    expect(Math.max(...latencies)).toBeLessThan(500);
    // None of the cut submissions was stored.
    const [{ n }] = await t.dataSource.query('SELECT count(*)::int AS n FROM submissions');
    expect(n).toBe(0);
  });

  it('closes a kept-alive connection left idle after its answer', async () => {
    const idle = await trickle(port, `GET /api/v1/me HTTP/1.1\r\nhost: localhost\r\nx-ac-api-key: ${key}\r\n\r\n`, '');
    open.push(idle);
    const closedAfter = await idle.closedAfter;
    expect(idle.answer()).toMatch(/^HTTP\/1\.1 200 /);
    expect(idle.answer()).toMatch(/keep-alive: timeout=\d+/i);
    expect(closedAfter).toBeGreaterThanOrEqual(KEEP_ALIVE_MS - 50);
    // Node keeps the socket a further keepAliveTimeoutBuffer (1 s) for a request already on the wire.
    expect(closedAfter).toBeLessThan(KEEP_ALIVE_MS + 1000 + 500);
  });
});
