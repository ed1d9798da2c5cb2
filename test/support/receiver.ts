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

/*
 * How an e2e test waits: for the condition it needs (waitFor) or for an instant it computed (untilClock).
 * To prove that something does NOT happen it watches a window (expectNothingFor) whose length the caller
 * names and justifies.
 */
const POLL_MS = 25;
const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls until `check` returns a truthy value, and returns it; throws naming `what` once `timeoutMs` has passed. */
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
    await pause(POLL_MS);
  }
}

/**
 * Proves an absence: polls `happened` from now until `windowMs` has passed and throws as soon as it returns
 * a truthy value (a string says what was seen); it is checked once more at the end of the window.
 */
export async function expectNothingFor(
  windowMs: number,
  what: string,
  happened: () => unknown,
  everyMs = POLL_MS,
): Promise<void> {
  const start = Date.now();
  const end = start + windowMs;
  for (;;) {
    const last = Date.now() >= end;
    const seen = await happened();
    if (seen) {
      const detail = typeof seen === 'string' ? `: ${seen}` : '';
      throw new Error(`Expected no ${what} within ${windowMs} ms, seen after ${Date.now() - start} ms${detail}`);
    }
    if (last) return;
    await pause(Math.min(everyMs, Math.max(0, end - Date.now())));
  }
}

/** Waits until the wall clock has passed `instantMs`: an expiry or a Retry-After the test read, not a guess. */
export async function untilClock(instantMs: number): Promise<void> {
  while (Date.now() <= instantMs) await pause(instantMs - Date.now() + 1);
}

/** Spaces out the requests of a stream the test itself generates (load, not a wait for anything). */
export const pace = pause;
