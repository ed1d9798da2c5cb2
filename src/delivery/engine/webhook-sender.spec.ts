import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { loadConfig } from '../../core/config/config.js';
import { Receiver, waitFor } from '../../../test/support/receiver.js';
import type { Resolver } from './ssrf-guard.js';
import { excerptOf, MAX_RESPONSE_BYTES, RESPONSE_EXCERPT_BYTES, USER_AGENT, WebhookSender } from './webhook-sender.js';

// Real sockets against a real local receiver; only name resolution is injected.
const resolver: Resolver = (hostname, callback) =>
  hostname === 'rebind.test'
    ? callback(null, [{ address: '127.0.0.1', family: 4 }])
    : callback(new Error('ENOTFOUND'), []);

const senderWith = (allowPrivateTargets: boolean, env: Record<string, string> = {}) =>
  new WebhookSender(
    loadConfig({
      NODE_ENV: 'test',
      DELIVERY_TIMEOUT_MS: '1000',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: String(allowPrivateTargets),
      ...env,
    }),
    resolver,
  );

describe('excerptOf', () => {
  const bytes = (text: string) => Buffer.byteLength(text, 'utf8');

  it('keeps a short body as it is', () => {
    expect(excerptOf(Buffer.from('{"ok":true}'))).toBe('{"ok":true}');
  });

  it('keeps the first 2 KiB of a long body', () => {
    expect(excerptOf(Buffer.from('a'.repeat(10_000)))).toBe('a'.repeat(RESPONSE_EXCERPT_BYTES));
  });

  it('drops a multi-byte character cut at the 2 KiB mark', () => {
    const excerpt = excerptOf(Buffer.from('a' + '€'.repeat(2000)));
    expect(bytes(excerpt)).toBeLessThanOrEqual(RESPONSE_EXCERPT_BYTES);
    expect(excerpt).toMatch(/^a€+$/);
  });

  it('replaces NUL, which Postgres text cannot hold', () => {
    expect(excerptOf(Buffer.from('ok\0ok'))).toBe('ok\uFFFDok');
  });

  it('stays within 2 KiB for a binary body', () => {
    const excerpt = excerptOf(Buffer.alloc(10_000, 0xff));
    expect(bytes(excerpt)).toBeLessThanOrEqual(RESPONSE_EXCERPT_BYTES);
    expect(excerpt).not.toContain('\0');
  });
});

describe('WebhookSender', () => {
  let receiver: Receiver;
  const senders: WebhookSender[] = [];
  const sender = (allowPrivateTargets: boolean, env?: Record<string, string>) => {
    const s = senderWith(allowPrivateTargets, env);
    senders.push(s);
    return s;
  };
  beforeEach(async () => {
    receiver = await Receiver.start();
  });
  afterEach(async () => {
    await receiver.close();
    await Promise.all(senders.splice(0).map((s) => s.onModuleDestroy()));
  });

  const port = () => new URL(receiver.url).port;

  describe('with the SSRF guard on', () => {
    it.each([
      ['an IPv4 loopback literal', () => `http://127.0.0.1:${port()}/hook`],
      ['a legacy-form loopback literal', () => `http://127.1:${port()}/hook`],
      ['an IPv6 loopback literal', () => `http://[::1]:${port()}/hook`],
      ['localhost', () => `http://localhost:${port()}/hook`],
      ['a name resolving to a loopback address', () => `http://rebind.test:${port()}/hook`],
    ])('refuses %s and sends nothing', async (_what, url) => {
      const result = await sender(false).send(url(), '{}', {});
      expect(result).toMatchObject({ ok: false, statusCode: null, refused: true });
      expect(result.error).toMatch(/refused by the SSRF guard: loopback/);
      expect(receiver.requests).toHaveLength(0);
    });
  });

  describe('with private targets allowed', () => {
    it('POSTs the body with the JSON content type, user agent and given headers', async () => {
      const result = await sender(true).send(receiver.url, '{"a":1}', { 'webhook-id': 'msg_1' });
      expect(result).toMatchObject({ ok: true, statusCode: 200, error: null });
      expect(receiver.requests).toHaveLength(1);
      const [req] = receiver.requests;
      expect(req.method).toBe('POST');
      expect(req.body).toBe('{"a":1}');
      expect(req.headers['content-type']).toBe('application/json');
      expect(req.headers['user-agent']).toBe(USER_AGENT);
      expect(req.headers['webhook-id']).toBe('msg_1');
    });

    it('keeps as many connections to a busy destination open for reuse as the worker has slots', async () => {
      // Node's agent keeps 256 idle sockets per host by default: past that, every round would reconnect.
      const busy = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => setTimeout(() => res.end('ok'), 20));
      });
      let connections = 0;
      busy.on('connection', () => connections++);
      await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
      try {
        const url = `http://127.0.0.1:${(busy.address() as AddressInfo).port}/hook`;
        const s = sender(true, { WORKER_CONCURRENCY: '300' });
        const round = async () =>
          (await Promise.all(Array.from({ length: 300 }, () => s.send(url, '{}', {})))).filter((r) => r.ok);
        expect(await round()).toHaveLength(300);
        expect(await round()).toHaveLength(300);
        expect(connections).toBe(300);
      } finally {
        busy.closeAllConnections();
        await new Promise((resolve) => busy.close(resolve));
      }
    });

    it('keeps at most 2 KiB of the response body, cut on a character boundary', async () => {
      receiver.behaviour = () => ({ status: 500, body: 'x' + 'é'.repeat(5000) });
      const result = await sender(true).send(receiver.url, '{}', {});
      expect(result.statusCode).toBe(500);
      expect(Buffer.byteLength(result.responseExcerpt!, 'utf8')).toBeLessThanOrEqual(RESPONSE_EXCERPT_BYTES);
      expect(result.responseExcerpt).toMatch(/^xé+$/);
    });

    it('fails a 2xx whose body exceeds 64 KiB, keeping the first 2 KiB it read', async () => {
      receiver.behaviour = () => ({ status: 200, body: 'START-' + 'a'.repeat(100_000) });
      const result = await sender(true).send(receiver.url, '{}', {});
      expect(result.ok).toBe(false);
      expect(result.statusCode).toBe(200);
      expect(result.error).toBe(`Response body exceeds ${MAX_RESPONSE_BYTES} bytes`);
      expect(result.responseExcerpt).toBe('START-' + 'a'.repeat(RESPONSE_EXCERPT_BYTES - 6));
    });

    it('keeps the excerpt of a too-large body cut on a character boundary', async () => {
      receiver.behaviour = () => ({ status: 200, body: 'x' + '€'.repeat(30_000) });
      const result = await sender(true).send(receiver.url, '{}', {});
      expect(result.error).toMatch(/exceeds/);
      // 1 + 682 * 3 = 2047 bytes: the 683rd euro sign would cross the 2 KiB mark.
      expect(result.responseExcerpt).toBe('x' + '€'.repeat(682));
    });

    it('accepts a 2xx whose body is exactly 64 KiB', async () => {
      receiver.behaviour = () => ({ status: 200, body: 'x'.repeat(MAX_RESPONSE_BYTES) });
      expect(await sender(true).send(receiver.url, '{}', {})).toMatchObject({ ok: true, statusCode: 200 });
    });

    it('does not follow a redirect', async () => {
      const target = await Receiver.start();
      try {
        receiver.behaviour = () => ({ status: 302, headers: { location: target.url } });
        const result = await sender(true).send(receiver.url, '{}', {});
        expect(result).toMatchObject({ ok: false, statusCode: 302 });
        expect(target.requests).toHaveLength(0);
      } finally {
        await target.close();
      }
    });

    it('times out a receiver that does not answer in time', async () => {
      receiver.behaviour = () => ({ hang: true });
      const result = await sender(true).send(receiver.url, '{}', {});
      expect(result).toMatchObject({
        ok: false,
        statusCode: null,
        error: 'Timed out after 1000 ms',
        failure: 'timeout',
      });
      expect(result.durationMs).toBeGreaterThanOrEqual(900);
      expect(result.durationMs).toBeLessThan(5000);
    });

    it('times out a receiver that answers the headers and then stalls the body', async () => {
      const stalling = http.createServer((_req, res) => {
        res.writeHead(200, { 'content-length': '100' });
        res.write('partial');
      });
      await new Promise<void>((resolve) => stalling.listen(0, '127.0.0.1', resolve));
      try {
        const { port: stallingPort } = stalling.address() as AddressInfo;
        const result = await sender(true).send(`http://127.0.0.1:${stallingPort}/hook`, '{}', {});
        expect(result).toMatchObject({ ok: false, statusCode: 200, responseExcerpt: 'partial' });
        expect(result.error).toMatch(/Timed out/);
      } finally {
        stalling.closeAllConnections();
        await new Promise((resolve) => stalling.close(resolve));
      }
    });

    it('keeps what it read of a body cut off by a reset', async () => {
      const cutting = http.createServer((_req, res) => {
        res.writeHead(502, { 'content-length': '1000' });
        res.write('<html>Bad gateway', () => res.socket?.destroy());
      });
      await new Promise<void>((resolve) => cutting.listen(0, '127.0.0.1', resolve));
      try {
        const { port: cuttingPort } = cutting.address() as AddressInfo;
        const result = await sender(true).send(`http://127.0.0.1:${cuttingPort}/hook`, '{}', {});
        expect(result).toMatchObject({ ok: false, statusCode: 502, responseExcerpt: '<html>Bad gateway' });
        expect(result.error).toBeTruthy();
      } finally {
        cutting.closeAllConnections();
        await new Promise((resolve) => cutting.close(resolve));
      }
    });

    it('reports a reset connection', async () => {
      receiver.behaviour = () => ({ reset: true });
      const result = await sender(true).send(receiver.url, '{}', {});
      expect(result).toMatchObject({ ok: false, statusCode: null, failure: 'reset' });
      expect(result.error).toBeTruthy();
    });

    it('connects before anything is written, and says so once the request is on the wire', async () => {
      receiver.behaviour = () => ({ hang: true });
      const connection = await sender(true).connect(receiver.url);
      expect(connection.ok).toBe(true);
      if (!connection.ok) return;
      expect(receiver.requests).toHaveLength(0);
      let writtenAt: number | undefined;
      const result = connection.send({ body: '{}', headers: {} }, () => (writtenAt = performance.now()));
      await waitFor(() => writtenAt !== undefined && receiver.requests.length === 1, 900, 'the write');
      // The fence is released at the write, long before the receiver answers (here: never).
      expect((await result).error).toBe('Timed out after 1000 ms');
    });

    it('closes a connection abandoned before any request', async () => {
      const server = net.createServer();
      const closed: Promise<void>[] = [];
      server.on('connection', (socket) => closed.push(new Promise((resolve) => socket.once('close', resolve))));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const { port: serverPort } = server.address() as AddressInfo;
        const connection = await sender(true).connect(`http://127.0.0.1:${serverPort}/hook`);
        if (connection.ok) connection.abandon();
        await waitFor(() => closed.length === 1, 1000, 'the connection');
        await closed[0];
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    });

    it('fails, without connecting again, when the connection closes between connect and write', async () => {
      // A host that accepted, then stopped: reconnecting here would hold the webhook's lock (the fence).
      let connections = 0;
      const server = net.createServer((socket) => {
        connections++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const { port: serverPort } = server.address() as AddressInfo;
        const connection = await sender(true).connect(`http://127.0.0.1:${serverPort}/hook`);
        expect(connection.ok).toBe(true);
        if (!connection.ok) return;
        await new Promise((resolve) => setTimeout(resolve, 100)); // the claim, as slow as it gets
        let written = false;
        const result = await connection.send({ body: '{}', headers: {} }, () => (written = true));
        expect(result).toMatchObject({ ok: false, statusCode: null });
        expect(result.durationMs).toBeLessThan(500);
        expect(written).toBe(true);
        expect(connections).toBe(1);
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    });

    it('says nothing went out when a kept-alive connection closed between connect and write', async () => {
      // The server's idle timeout closes the kept connection while the claim runs: no attempt was made.
      let requests = 0;
      let closed = 0;
      const server = http.createServer((req, res) => {
        requests++;
        req.resume();
        req.on('end', () => res.end('ok'));
      });
      server.keepAliveTimeout = 50;
      server.on('connection', (socket) => socket.on('close', () => closed++));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
        const s = sender(true);
        expect(await s.send(url, '{}', {})).toMatchObject({ ok: true });
        const connection = await s.connect(url); // the kept-alive one
        expect(connection.ok).toBe(true);
        if (!connection.ok) return;
        await waitFor(() => closed === 1, 5_000, 'the server to close the idle connection');
        let written = false;
        const result = await connection.send({ body: '{}', headers: {} }, () => (written = true));
        expect(result).toMatchObject({ ok: false, statusCode: null, unsent: true });
        expect(written).toBe(true);
        expect(requests).toBe(1);
        // A new connection sends it.
        expect(await s.send(url, '{}', {})).toMatchObject({ ok: true });
        expect(requests).toBe(2);
      } finally {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    });

    it('refuses a receiver whose TLS certificate does not verify, and sends nothing', async () => {
      // A self-signed test certificate (test/support/tls): no CA the sender trusts vouches for it.
      const dir = new URL('../../../test/support/tls/', import.meta.url);
      let requests = 0;
      const tlsServer = https.createServer(
        {
          key: readFileSync(new URL('self-signed.key.pem', dir)),
          cert: readFileSync(new URL('self-signed.cert.pem', dir)),
        },
        (_req, res) => {
          requests++;
          res.end('ok');
        },
      );
      await new Promise<void>((resolve) => tlsServer.listen(0, '127.0.0.1', resolve));
      try {
        const { port: tlsPort } = tlsServer.address() as AddressInfo;
        const result = await sender(true).send(`https://127.0.0.1:${tlsPort}/hook`, '{}', {});
        expect(result).toMatchObject({ ok: false, statusCode: null });
        expect(result.error).toMatch(/SELF_SIGNED_CERT/);
        expect(requests).toBe(0);
      } finally {
        tlsServer.closeAllConnections();
        await new Promise((resolve) => tlsServer.close(resolve));
      }
    });

    it('reports a refused connection', async () => {
      const closed = net.createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const { port: closedPort } = closed.address() as AddressInfo;
      await new Promise((resolve) => closed.close(resolve));
      const result = await sender(true).send(`http://127.0.0.1:${closedPort}/hook`, '{}', {});
      expect(result).toMatchObject({ ok: false, statusCode: null, failure: 'refused' });
      expect(result.error).toMatch(/ECONNREFUSED/);
    });
  });
});
