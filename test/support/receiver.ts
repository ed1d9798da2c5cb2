import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  receivedAt: number;
  /** When its answer was sent (or the connection closed); unset while it is open. */
  answeredAt?: number;
  /** Requests open at the receiver when this one arrived, itself included. */
  openAtArrival: number;
}

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  /** Wait this long before answering. */
  delayMs?: number;
  /** Never answer (the request times out on the sender's side). */
  hang?: boolean;
  /** Reset the connection instead of answering. */
  reset?: boolean;
}

export type Behaviour = (request: ReceivedRequest, index: number) => Reply;

/** A real local HTTP receiver that records every request and answers as told. */
export class Receiver {
  readonly requests: ReceivedRequest[] = [];
  /** Requests received and not yet answered (or reset), now and at most. */
  open = 0;
  maxOpen = 0;
  private readonly server: http.Server;
  behaviour: Behaviour;

  private constructor(behaviour: Behaviour) {
    this.behaviour = behaviour;
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const received: ReceivedRequest = {
          method: req.method ?? '',
          path: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          receivedAt: Date.now(),
          openAtArrival: ++this.open,
        };
        this.requests.push(received);
        this.maxOpen = Math.max(this.maxOpen, this.open);
        res.on('close', () => {
          this.open--;
          received.answeredAt = Date.now();
        });
        const reply = this.behaviour(received, this.requests.length - 1);
        if (reply.reset) return void req.socket.destroy();
        if (reply.hang) return;
        setTimeout(() => {
          res.writeHead(reply.status ?? 200, reply.headers ?? {});
          res.end(reply.body ?? '');
        }, reply.delayMs ?? 0);
      });
    });
  }

  static async start(behaviour: Behaviour = () => ({ status: 200 })): Promise<Receiver> {
    const receiver = new Receiver(behaviour);
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Polls until `check` returns a truthy value or the time is up. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
