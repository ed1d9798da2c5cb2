// The webhook receiver of the bench: keep-alive, answers 200 at once, counts deliveries by webhook-id.
import { Buffer } from 'node:buffer';
import { once } from 'node:events';
import http from 'node:http';
import { performance } from 'node:perf_hooks';

/**
 * Receipt times are performance.now() of this process, the clock the submission client uses too.
 * `onPayload(payload, receivedAt)` (set for the latency phase) gets the parsed body of each first receipt.
 */
export class BenchReceiver {
  constructor() {
    this.reset();
    this.onPayload = null;
    this.server = http.createServer((req, res) => this.handle(req, res));
    // Longer than the sender's idle keep-alive, so the server never closes a connection the sender reuses.
    this.server.keepAliveTimeout = 65_000;
    this.server.headersTimeout = 66_000;
  }

  reset() {
    this.requests = 0;
    this.deliveryIds = new Set();
    this.duplicates = 0;
    this.firstAt = null;
    this.lastAt = null;
  }

  get unique() {
    return this.deliveryIds.size;
  }

  handle(req, res) {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const at = performance.now();
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
      res.end('ok');
      this.requests += 1;
      this.firstAt ??= at;
      this.lastAt = at;
      const id = req.headers['webhook-id'];
      if (this.deliveryIds.has(id)) {
        this.duplicates += 1;
        return;
      }
      this.deliveryIds.add(id);
      if (this.onPayload) this.onPayload(JSON.parse(Buffer.concat(chunks).toString('utf8')), at);
    });
  }

  async listen() {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.url = `http://127.0.0.1:${this.server.address().port}`;
    return this.url;
  }

  async close() {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
