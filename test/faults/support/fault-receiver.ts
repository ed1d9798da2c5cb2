import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Answer {
  status?: number;
  headers?: Record<string, string>;
  /** Answer after this long. */
  delayMs?: number;
  /** Never answer; the sender's timeout ends the request. */
  hang?: boolean;
  /** Reset the connection instead of answering. */
  reset?: boolean;
}

export interface Received {
  /** The `webhook-id` header: the delivery id, the same on every retry. */
  webhookId: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** When the request reached the receiver (its headers were read). */
  at: number;
  /** 1 for the first request carrying this webhook-id, 2 for the next one, ... */
  attempt: number;
  answer: Answer;
  /** A 2xx was written to the socket completely: the sender may count the delivery done. */
  ok: boolean;
}

export interface AttemptInfo {
  webhookId: string;
  attempt: number;
  now: number;
}

export type Behaviour = (info: AttemptInfo) => Answer;

/** A local HTTP receiver that answers as its behaviour says and records every request and answer. */
export class FaultReceiver {
  readonly received: Received[] = [];
  /** Requests open now and at most, as the sender sees them (see `senderTimeoutMs`). */
  inFlight = 0;
  maxInFlight = 0;
  /** At the moment the most requests were open: how long each had been open (ms) and its webhook-id. */
  busiest: { ageMs: number; webhookId: string }[] = [];
  private readonly open = new Map<http.IncomingMessage, number>();
  private readonly attempts = new Map<string, number>();
  private readonly server: http.Server;

  private constructor(
    readonly name: string,
    public behaviour: Behaviour,
    private readonly senderTimeoutMs: number,
  ) {
    this.server = http.createServer((req, res) => this.handle(req, res));
    this.server.keepAliveTimeout = 60_000;
  }

  /** `senderTimeoutMs`: the sender's attempt timeout (DELIVERY_TIMEOUT_MS), for counting requests in flight. */
  static async start(name: string, behaviour: Behaviour = () => ({ status: 200 }), senderTimeoutMs = Infinity) {
    const receiver = new FaultReceiver(name, behaviour, senderTimeoutMs);
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks/${this.name}`;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const at = Date.now();
    // The sender gives up after its timeout: an older request is no longer in flight, whenever this
    // (busy) process gets to see its connection close.
    for (const [r, since] of this.open) if (at - since >= this.senderTimeoutMs) this.open.delete(r);
    this.open.set(req, at);
    this.inFlight = this.open.size;
    if (this.inFlight > this.maxInFlight) {
      this.maxInFlight = this.inFlight;
      this.busiest = [...this.open].map(([r, since]) => ({
        ageMs: at - since,
        webhookId: String(r.headers['webhook-id']),
      }));
    }
    res.once('close', () => {
      this.open.delete(req);
      this.inFlight = this.open.size;
    });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const webhookId = String(req.headers['webhook-id'] ?? '');
      const attempt = (this.attempts.get(webhookId) ?? 0) + 1;
      this.attempts.set(webhookId, attempt);
      const answer = this.behaviour({ webhookId, attempt, now: at });
      const record: Received = {
        webhookId,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at,
        attempt,
        answer,
        ok: false,
      };
      this.received.push(record);
      if (answer.reset) return void req.socket.destroy();
      if (answer.hang) return;
      const status = answer.status ?? 200;
      res.once('finish', () => (record.ok = status >= 200 && status < 300));
      const reply = () => {
        if (res.destroyed) return;
        res.writeHead(status, { 'content-type': 'text/plain', ...answer.headers });
        res.end(status < 300 ? 'ok' : `status ${status}`);
      };
      if (answer.delayMs) setTimeout(reply, answer.delayMs);
      else reply();
    });
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
