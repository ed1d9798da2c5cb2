// Receivers of the delivery-engine phases: N HTTP servers on N distinct ports (so each is a destination
// of its own for the per-destination cap), answering 200 after a delay (fixed, or growing with the
// requests open), or never ("dead": the connection is accepted and the request read, but no answer is
// ever written). One tally for the whole group.
import { Buffer } from 'node:buffer';
import { once } from 'node:events';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { clearTimeout, setTimeout } from 'node:timers';

export class ReceiverGroup {
  /**
   * `count` servers; `delayMs` before each 200 (0: at once), or `hang: true` never to answer.
   * Receipt times are performance.now() of this process when a request's body has arrived (before any
   * answer), the clock the submission client uses too. `onPayload(payload, receivedAt, index)` gets the
   * parsed body of each first receipt of a webhook-id.
   */
  constructor(count, { delayMs = 0, hang = false, overloadAbove = null, slowsPer = null } = {}) {
    this.count = count;
    this.delayMs = delayMs;
    this.hang = hang;
    /** When set, a request that finds more than this many open at its server is answered 503. */
    this.overloadAbove = overloadAbove;
    /**
     * When set, a request's delay is delayMs x (1 + open / slowsPer), open being the requests open at its
     * server when it arrived (itself included): a host whose answers slow down with its load.
     */
    this.slowsPer = slowsPer;
    this.onPayload = null;
    this.servers = [];
    this.urls = [];
    this.timers = new Set();
    this.reset();
  }

  reset() {
    this.requests = 0;
    this.deliveryIds = new Set();
    this.duplicates = 0;
    this.firstAt = null;
    this.lastAt = null;
    /** Requests received per server (index), first receipts and repeats alike. */
    this.perServer = new Array(this.count).fill(0);
    /** Requests open (received, not answered) per server, now and at most. */
    this.openPerServer = new Array(this.count).fill(0);
    this.maxOpen = 0;
    /** Each request's arrival: [performance.now(), requests open at its server then (itself included), status]. */
    this.arrivals = [];
  }

  get unique() {
    return this.deliveryIds.size;
  }

  handle(index, req, res) {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const at = performance.now();
      this.requests += 1;
      this.perServer[index] += 1;
      this.firstAt ??= at;
      this.lastAt = at;
      const id = req.headers['webhook-id'];
      if (this.deliveryIds.has(id)) {
        this.duplicates += 1;
      } else {
        this.deliveryIds.add(id);
        if (this.onPayload) this.onPayload(JSON.parse(Buffer.concat(chunks).toString('utf8')), at, index);
      }
      const open = ++this.openPerServer[index];
      this.maxOpen = Math.max(this.maxOpen, open);
      res.on('close', () => (this.openPerServer[index] -= 1));
      const status = this.overloadAbove !== null && open > this.overloadAbove ? 503 : 200;
      this.arrivals.push([at, open, status]);
      if (this.hang) return; // dead receiver: the socket stays open, nothing is ever written
      const answer = () => {
        res.writeHead(status, { 'content-type': 'text/plain', 'content-length': '2' });
        res.end('ok');
      };
      const delayMs = this.slowsPer ? this.delayMs * (1 + open / this.slowsPer) : this.delayMs;
      if (delayMs <= 0) return answer();
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        answer();
      }, delayMs);
      this.timers.add(timer);
    });
  }

  async listen() {
    for (let i = 0; i < this.count; i += 1) {
      const server = http.createServer((req, res) => this.handle(i, req, res));
      // Longer than the sender's idle keep-alive, so the server never closes a connection the sender reuses;
      // no request timeout, so a dead receiver holds a request until the sender gives up.
      server.keepAliveTimeout = 65_000;
      server.headersTimeout = 66_000;
      server.requestTimeout = 0;
      server.timeout = 0;
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      this.servers.push(server);
      this.urls.push(`http://127.0.0.1:${server.address().port}`);
    }
    return this.urls;
  }

  /** Closes every server and destroys its connections: a sender still waiting on a dead one gets an error. */
  async close() {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await Promise.all(
      this.servers.map(
        (server) =>
          new Promise((resolve) => {
            server.closeAllConnections();
            server.close(() => resolve());
          }),
      ),
    );
    this.servers = [];
  }
}
