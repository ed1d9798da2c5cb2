import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import http, { type ClientRequest, type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { assertPublicLiteral, ForbiddenDestinationError, guardedLookup, type Resolver } from './ssrf-guard.js';

export const MAX_RESPONSE_BYTES = 64 * 1024;
export const RESPONSE_EXCERPT_BYTES = 2 * 1024;
export const USER_AGENT = 'CalcWebhooks/1.0 (+https://github.com/calc-webhooks)';

export interface SendResult {
  ok: boolean;
  statusCode: number | null;
  /** The first 2 KiB of the response body. */
  responseExcerpt: string | null;
  retryAfter: string | undefined;
  error: string | null;
  durationMs: number;
  /** The SSRF guard refused the destination: retrying would be refused again. */
  refused?: true;
}

export interface Outgoing {
  body: string;
  headers: Record<string, string>;
}

/** A connection to the destination, established before anything is decided or written. */
export type Connection =
  | {
      ok: true;
      /** Writes the request; `written` runs once it has been handed to the socket. */
      send(outgoing: Outgoing, written: () => void): Promise<SendResult>;
      /** Drops the connection without sending (the delivery was not to be attempted after all). */
      abandon(): void;
    }
  | { ok: false; result: SendResult };

export const SSRF_RESOLVER = Symbol('SSRF_RESOLVER');

class ResponseTooLargeError extends Error {}
class TimeoutError extends Error {}

/** The first 2 KiB as text Postgres can store: no NUL, no character cut in half. */
export function excerptOf(raw: Buffer): string {
  const text = raw.subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8').replaceAll('\0', '\uFFFD');
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= RESPONSE_EXCERPT_BYTES) return text;
  // stream: true holds back a trailing partial character instead of emitting U+FFFD for it.
  return new TextDecoder().decode(bytes.subarray(0, RESPONSE_EXCERPT_BYTES), { stream: true });
}

function describe(error: unknown): string {
  if (error instanceof ForbiddenDestinationError || error instanceof ResponseTooLargeError) return error.message;
  if (error instanceof TimeoutError) return error.message;
  const e = error as { code?: string; message?: string; cause?: unknown };
  if (e.cause instanceof ForbiddenDestinationError) return e.cause.message;
  return [e.code, e.message].filter(Boolean).join(': ') || 'Request failed';
}

const failure = (error: unknown, durationMs: number): SendResult => ({
  ok: false,
  statusCode: null,
  responseExcerpt: null,
  retryAfter: undefined,
  error: describe(error),
  durationMs,
  ...(ForbiddenDestinationError.isRefusal(error) && { refused: true }),
});

/**
 * POSTs signed payloads over keep-alive connections. Node's http client rather than undici: the removal
 * fence needs the socket connected *before* the webhook's lock is taken and the request written right
 * after, and undici offers no point between "connected" and "written" where a caller may wait (its
 * dispatch hooks are synchronous), so a host that never accepts would hold the lock.
 */
@Injectable()
export class WebhookSender implements OnModuleDestroy {
  private readonly agents: { 'http:': http.Agent; 'https:': https.Agent };
  private readonly lookup: ReturnType<typeof guardedLookup> | undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(SSRF_RESOLVER) resolver: Resolver | undefined,
  ) {
    // Idle sockets close after 4 s, before the 5 s keep-alive of common servers drops them under a request.
    // As many may idle as attempts run at once: with Node's default of 256 per host, a worker of 500
    // slots closed and reopened a connection for about one delivery in five to a busy receiver.
    const options = {
      keepAlive: true,
      timeout: 4_000,
      scheduling: 'lifo' as const,
      maxFreeSockets: Math.max(256, config.workerConcurrency),
    };
    this.agents = { 'http:': new http.Agent(options), 'https:': new https.Agent(options) };
    this.lookup = config.allowPrivateTargets ? undefined : guardedLookup(resolver);
  }

  /** Connects to the url's host (a kept-alive socket when there is one); never throws. */
  connect(url: string): Promise<Connection> {
    const started = performance.now();
    const failed = (error: unknown): Connection => ({
      ok: false,
      result: failure(error, Math.round(performance.now() - started)),
    });
    let req: ClientRequest;
    try {
      const target = new URL(url);
      if (!this.config.allowPrivateTargets) assertPublicLiteral(target.hostname);
      const transport = target.protocol === 'https:' ? https : http;
      req = transport.request(target, {
        method: 'POST',
        agent: this.agents[target.protocol as 'http:' | 'https:'],
        headers: { 'content-type': 'application/json', 'user-agent': USER_AGENT },
        ...(this.lookup ? { lookup: this.lookup } : {}),
      });
    } catch (error) {
      return Promise.resolve(failed(error));
    }
    const ms = this.config.deliveryTimeoutMs;
    return new Promise((resolve) => {
      const timer = setTimeout(() => req.destroy(new TimeoutError(`Timed out after ${ms} ms`)), ms);
      // Once connected, an error (the socket reset while the claim runs, say) is kept for write().
      let connected = false;
      let lateError: Error | undefined;
      req.on('error', (error: Error) => {
        if (connected) {
          lateError ??= error;
          return;
        }
        clearTimeout(timer);
        req.destroy();
        resolve(failed(error));
      });
      const ready = () => {
        clearTimeout(timer);
        connected = true;
        resolve({
          ok: true,
          send: (outgoing, written) => this.write(req, outgoing, written, lateError),
          abandon: () => req.destroy(),
        });
      };
      req.once('socket', (socket) => {
        if (req.reusedSocket || !socket.connecting) ready();
        else socket.once(req.protocol === 'https:' ? 'secureConnect' : 'connect', ready);
      });
    });
  }

  /** Connects and POSTs in one go (no fence): for callers with nothing to decide in between. */
  async send(url: string, body: string, headers: Record<string, string>): Promise<SendResult> {
    const connection = await this.connect(url);
    if (!connection.ok) return connection.result;
    return connection.send({ body, headers }, () => undefined);
  }

  /**
   * Writes the request and reads the answer, at most 64 KiB of body, all within one timeout. Events
   * and one timer rather than a promise per step: this runs once per delivery attempt.
   */
  private write(
    req: ClientRequest,
    { body, headers }: Outgoing,
    written: () => void,
    earlier: Error | undefined,
  ): Promise<SendResult> {
    const started = performance.now();
    const ms = this.config.deliveryTimeoutMs;
    return new Promise((resolve) => {
      let statusCode: number | null = null;
      let retryAfter: string | undefined;
      let settled = false;
      const finish = (result: Omit<SendResult, 'durationMs'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ...result, durationMs: Math.round(performance.now() - started) });
      };
      // Before the answer: a failure of the attempt as a whole. After it: the status, without a body.
      const fail = (error: unknown) => {
        req.destroy();
        if (statusCode === null) finish(failure(error, 0));
        else finish({ ok: false, statusCode, responseExcerpt: null, retryAfter, error: describe(error) });
      };
      const timer = setTimeout(() => fail(new TimeoutError(`Timed out after ${ms} ms`)), ms);
      req.on('error', fail);
      req.once('response', (response: IncomingMessage) => {
        statusCode = response.statusCode ?? null;
        const header = response.headers['retry-after'];
        retryAfter = Array.isArray(header) ? header[0] : header;
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_RESPONSE_BYTES)
            fail(new ResponseTooLargeError(`Response body exceeds ${MAX_RESPONSE_BYTES} bytes`));
          else chunks.push(chunk);
        });
        response.on('error', fail);
        response.on('end', () => {
          const ok = statusCode !== null && statusCode >= 200 && statusCode < 300;
          finish({ ok, statusCode, responseExcerpt: excerptOf(Buffer.concat(chunks)), retryAfter, error: null });
        });
      });
      try {
        if (earlier) throw earlier; // the socket failed while the claim ran: nothing is written
        for (const name in headers) req.setHeader(name, headers[name]);
        req.setHeader('content-length', Buffer.byteLength(body));
        req.end(body); // a connected socket takes the request synchronously
      } catch (error) {
        fail(error);
      }
      setImmediate(written);
    });
  }

  onModuleDestroy(): void {
    this.agents['http:'].destroy();
    this.agents['https:'].destroy();
  }
}
