// The attempt path's HTTP client on its own: CPU per POST of the way WebhookSender uses Node's http client
// (a keep-alive Agent, headers set once the socket is there, the body written with end()) against undici's
// Pool, to a receiver in another process that answers 200 at once. Rounds alternate, so both see the same
// machine state. Usage: `node bench/http-clients.mjs [ROUNDS] [REQUESTS] [CONCURRENCY]` (3, 20000, 100).
import { Buffer } from 'node:buffer';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { URL } from 'node:url';
import { Pool } from 'undici';

if (process.argv[2] === '--receiver') {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'));
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
} else {
  const [rounds = 3, requests = 20_000, concurrency = 100] = process.argv.slice(2).map(Number);
  const receiver = spawn(process.execPath, [new URL(import.meta.url).pathname, '--receiver'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [chunk] = await once(receiver.stdout, 'data');
  const port = Number(chunk.toString().trim());
  const url = `http://127.0.0.1:${port}/hook/1`;
  const now = new Date().toISOString();
  const body = JSON.stringify({
    webhookId: 'w'.repeat(24),
    event: 'newSubmission',
    data: { id: 's'.repeat(24), calculatorId: 'c'.repeat(24), finished: true, data: { answer: 42 }, meta: {} },
    createdAt: now,
    updatedAt: now,
  });
  const signed = { 'webhook-id': 'd'.repeat(24), 'webhook-timestamp': '1764180000', 'webhook-signature': 'v1,x' };
  const base = { 'content-type': 'application/json', 'user-agent': 'CalcWebhooks/1.0' };
  const agent = new http.Agent({ keepAlive: true, timeout: 4_000, scheduling: 'lifo', maxFreeSockets: 500 });
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: concurrency, pipelining: 1 });

  const clients = {
    'node:http (as WebhookSender)': () =>
      new Promise((resolve, reject) => {
        const req = http.request(new URL(url), { method: 'POST', agent, headers: base });
        req.on('error', reject);
        req.once('response', (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => resolve(Buffer.concat(chunks).toString()));
        });
        req.once('socket', (socket) => {
          const write = () => {
            for (const name in signed) req.setHeader(name, signed[name]);
            req.setHeader('content-length', Buffer.byteLength(body));
            req.end(body);
          };
          if (req.reusedSocket || !socket.connecting) write();
          else socket.once('connect', write);
        });
      }),
    'undici Pool': async () => {
      const res = await pool.request({ path: '/hook/1', method: 'POST', body, headers: { ...base, ...signed } });
      return res.body.text();
    },
  };

  const run = async (send, count) => {
    let started = 0;
    const loop = async () => {
      while (started++ < count) await send();
    };
    await Promise.all(Array.from({ length: concurrency }, loop));
  };

  for (let round = 1; round <= rounds; round++) {
    for (const [name, send] of Object.entries(clients)) {
      await run(send, 2_000); // warm-up: sockets open, code optimised
      const cpu = process.cpuUsage();
      const t0 = performance.now();
      await run(send, requests);
      const used = process.cpuUsage(cpu);
      const seconds = (performance.now() - t0) / 1000;
      const perRequest = (used.user + used.system) / requests;
      console.log(
        `round ${round} ${name}: ${Math.round(requests / seconds)} req/s, ${perRequest.toFixed(1)} µs CPU per request`,
      );
    }
  }
  await pool.close();
  agent.destroy();
  receiver.kill();
}
