import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import net from 'node:net';
import tls from 'node:tls';
import { Client, type Dispatcher } from 'undici';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { assertPublicLiteral, ForbiddenDestinationError, guardedLookup, type Resolver } from './ssrf-guard.js';

export const MAX_RESPONSE_BYTES = 64 * 1024;
export const RESPONSE_EXCERPT_BYTES = 2 * 1024;
export const USER_AGENT = 'CalcWebhooks/1.0 (+https://github.com/calc-webhooks)';

export interface SendResult {
  ok: boolean;
  statusCode: number | null;
  /** The first 2 KiB of the response body, as much as was read: a failed attempt keeps it too. */
  responseExcerpt: string | null;
  retryAfter: string | undefined;
  error: string | null;
  durationMs: number;
  /** The SSRF guard refused the destination: retrying would be refused again. */
  refused?: true;
  /** A kept-alive connection closed before the request went out: no attempt was made. */
  unsent?: true;
  /** Why no answer came, when none did: what the host's adaptive limit reads. */
  failure?: SendFailure;
}

/** No answer in time, the connection refused, reset by the host, or anything else (DNS, TLS, the guard). */
export type SendFailure = 'timeout' | 'refused' | 'reset' | 'other';

export interface Outgoing {
  body: string;
  headers: Record<string, string>;
  /** The whole exchange's limit; DELIVERY_TIMEOUT_MS when absent. */
  timeoutMs?: number;
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

function failureOf(error: unknown): SendFailure {
  if (error instanceof TimeoutError) return 'timeout';
  const { code } = error as { code?: string };
  if (code === 'ECONNREFUSED') return 'refused';
  // undici names a connection the server closed under a request UND_ERR_SOCKET.
  return code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET' ? 'reset' : 'other';
}

const failure = (error: unknown, durationMs: number): SendResult => ({
  ok: false,
  statusCode: null,
  responseExcerpt: null,
  retryAfter: undefined,
  error: describe(error),
  durationMs,
  failure: failureOf(error),
  ...(ForbiddenDestinationError.isRefusal(error) && { refused: true }),
});

// Idle connections close after 4 s, before the 5 s keep-alive of common servers drops them under a request.
const IDLE_MS = 4_000;

/** One kept-alive connection: an undici Client that owns one socket this sender opened. */
interface Pooled {
  client: Client;
  /** Until undici takes it (at the first request), the socket is this sender's to close. */
  socket: net.Socket;
  origin: string;
  /** False until a request went out on it (undici has not taken the socket yet). */
  used: boolean;
}

/**
 * POSTs signed payloads over keep-alive connections, with undici (about half the CPU per request of
 * Node's http client: bench/http-clients.mjs). The removal fence needs the socket connected *before*
 * the webhook's lock is taken and the request written right after, and undici connects on dispatch: so
 * this sender opens each socket itself (with the SSRF guard's pinned lookup) and hands it to a Client of
 * its own through undici's `connect` option, once. A Client whose socket closes is never reconnected,
 * so a host that stops accepting cannot hold the lock: that request fails, as a reset would.
 */
@Injectable()
export class WebhookSender implements OnModuleDestroy {
  private readonly lookup: ReturnType<typeof guardedLookup> | undefined;
  /** Idle connections per origin, the most recently used last (reused first); only open ones. */
  private readonly idle = new Map<string, Pooled[]>();
  /** Every open connection, idle or sending; one leaves it (discard) when its socket is gone for good. */
  private readonly all = new Set<Pooled>();
  // As many may idle as attempts run at once: with 256 per host, a worker of 500 slots closed and
  // reopened a connection for about one delivery in five to a busy receiver.
  private readonly maxIdle: number;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(SSRF_RESOLVER) resolver: Resolver | undefined,
  ) {
    this.maxIdle = Math.max(256, config.workerConcurrency);
    this.lookup = config.allowPrivateTargets ? undefined : guardedLookup(resolver);
  }

  /** Connects to the url's host (a kept-alive connection when there is one); never throws. */
  connect(url: string): Promise<Connection> {
    const started = performance.now();
    const failed = (error: unknown): Connection => ({
      ok: false,
      result: failure(error, Math.round(performance.now() - started)),
    });
    let target: URL;
    try {
      target = new URL(url);
      if (target.protocol !== 'http:' && target.protocol !== 'https:') {
        throw new Error(`Unsupported protocol ${target.protocol}`);
      }
      if (!this.config.allowPrivateTargets) assertPublicLiteral(target.hostname);
    } catch (error) {
      return Promise.resolve(failed(error));
    }
    const path = `${target.pathname}${target.search}`;
    const reused = this.takeIdle(target.origin);
    if (reused) return Promise.resolve(this.ready(reused, path));
    return this.open(target).then(({ pooled, lateError }) => this.ready(pooled, path, lateError), failed);
  }

  /** Connects and POSTs in one go (no fence): for callers with nothing to decide in between. */
  async send(url: string, body: string, headers: Record<string, string>): Promise<SendResult> {
    const connection = await this.connect(url);
    if (!connection.ok) return connection.result;
    return connection.send({ body, headers }, () => undefined);
  }

  private ready(pooled: Pooled, path: string, lateError: () => Error | undefined = () => undefined): Connection {
    return {
      ok: true,
      send: (outgoing, written) => this.write(pooled, path, outgoing, written, lateError()),
      // Never used: its socket is not undici's yet, so it would idle with no timeout. Used: still good.
      abandon: () => (pooled.used ? this.putBack(pooled) : this.discard(pooled)),
    };
  }

  private takeIdle(origin: string): Pooled | undefined {
    const list = this.idle.get(origin);
    const pooled = list?.pop(); // discard() takes a closed one out of its list
    if (list?.length === 0) this.idle.delete(origin);
    return pooled;
  }

  private putBack(pooled: Pooled): void {
    if (!this.all.has(pooled)) return; // discarded meanwhile (its socket closed during the request)
    const list = this.idle.get(pooled.origin) ?? [];
    if (list.length >= this.maxIdle) return this.discard(pooled);
    list.push(pooled);
    this.idle.set(pooled.origin, list);
  }

  private discard(pooled: Pooled): void {
    if (!this.all.delete(pooled)) return;
    const list = this.idle.get(pooled.origin);
    const at = list?.indexOf(pooled) ?? -1;
    if (at >= 0) list!.splice(at, 1);
    if (list?.length === 0) this.idle.delete(pooled.origin);
    void pooled.client.destroy().catch(() => undefined);
    pooled.socket.destroy();
  }

  /** Opens a socket to the target (within the delivery timeout) and gives it to a Client of its own. */
  private open(target: URL): Promise<{ pooled: Pooled; lateError: () => Error | undefined }> {
    const secure = target.protocol === 'https:';
    const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
    const port = Number(target.port) || (secure ? 443 : 80);
    const options = { host, port, ...(this.lookup ? { lookup: this.lookup } : {}) };
    const socket = secure
      ? tls.connect({ ...options, servername: net.isIP(host) ? undefined : host, ALPNProtocols: ['http/1.1'] })
      : net.connect(options);
    const ms = this.config.deliveryTimeoutMs;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => socket.destroy(new TimeoutError(`Timed out after ${ms} ms`)), ms);
      // Once connected, an error (the socket reset while the claim runs, say) is kept for write().
      let connected = false;
      let lateError: Error | undefined;
      socket.on('error', (error: Error) => {
        if (connected) {
          lateError ??= error;
          return;
        }
        clearTimeout(timer);
        socket.destroy();
        reject(error);
      });
      socket.once(secure ? 'secureConnect' : 'connect', () => {
        clearTimeout(timer);
        connected = true;
        let handed = false;
        const client = new Client(target.origin, {
          // Answered on the next microtask: undici ignores a connector that calls back synchronously
          // (it is still inside its own resume loop, so the queued request would wait forever).
          connect: (_opts, callback) => {
            queueMicrotask(() => {
              if (handed || socket.destroyed) {
                callback(lateError ?? new Error('Connection closed before the request was written'), null);
                return;
              }
              handed = true;
              callback(null, socket);
            });
          },
          pipelining: 1,
          keepAliveTimeout: IDLE_MS,
          keepAliveMaxTimeout: IDLE_MS,
          // The attempt's own timer bounds the whole exchange (write()).
          headersTimeout: 0,
          bodyTimeout: 0,
        });
        const pooled: Pooled = { client, socket, origin: target.origin, used: false };
        client.on('disconnect', () => this.discard(pooled));
        this.all.add(pooled);
        resolve({ pooled, lateError: () => lateError });
      });
    });
  }

  /**
   * Writes the request and reads the answer, at most 64 KiB of body, all within one timeout. A handler
   * and one timer rather than a stream per step: this runs once per delivery attempt.
   */
  private write(
    pooled: Pooled,
    path: string,
    { body, headers, timeoutMs }: Outgoing,
    written: () => void,
    earlier: Error | undefined,
  ): Promise<SendResult> {
    const started = performance.now();
    const ms = timeoutMs ?? this.config.deliveryTimeoutMs;
    const reused = pooled.used;
    pooled.used = true;
    return new Promise((resolve) => {
      let statusCode: number | null = null;
      let retryAfter: string | undefined;
      let reusable = true;
      let settled = false;
      let sent = false;
      let controller: Dispatcher.DispatchController | undefined;
      // Only the excerpt's bytes are kept; the rest of the body is counted against the limit and dropped.
      const head: Buffer[] = [];
      let size = 0;
      const excerpt = () => excerptOf(Buffer.concat(head));
      const markSent = () => {
        if (sent) return;
        sent = true;
        written();
      };
      const finish = (result: Omit<SendResult, 'durationMs'>, keep: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        markSent();
        if (keep && reusable) this.putBack(pooled);
        else this.discard(pooled);
        resolve({ ...result, durationMs: Math.round(performance.now() - started) });
      };
      // Before the answer: a failure of the attempt as a whole, or none at all when a kept-alive connection
      // was found closed before the request went out. After it: the status and the body read so far.
      const fail = (error: unknown) => {
        if (statusCode === null && reused && !sent && !(error instanceof TimeoutError)) {
          finish({ ...failure(error, 0), unsent: true }, false);
        } else if (statusCode === null) finish(failure(error, 0), false);
        else finish({ ok: false, statusCode, responseExcerpt: excerpt(), retryAfter, error: describe(error) }, false);
        controller?.abort(error as Error);
      };
      const timer = setTimeout(() => fail(new TimeoutError(`Timed out after ${ms} ms`)), ms);
      if (earlier) return fail(earlier); // the socket failed while the claim ran: nothing is written
      // Closed while the claim ran (its idle timeout, the server's): undici would refuse the dispatch.
      if (!this.all.has(pooled)) return fail(new Error('Connection closed before the request was written'));
      try {
        pooled.client.dispatch(
          {
            path,
            method: 'POST',
            // The caller's headers first: content-type and user-agent are ours whatever they hold.
            headers: { ...headers, 'content-type': 'application/json', 'user-agent': USER_AGENT },
            body,
          },
          {
            onRequestStart: (c) => {
              controller = c;
            },
            onRequestSent: markSent,
            onResponseStart: (_c, status, responseHeaders) => {
              statusCode = status;
              const header = responseHeaders['retry-after'];
              retryAfter = Array.isArray(header) ? header[0] : header;
              if (/\bclose\b/i.test(String(responseHeaders.connection ?? ''))) reusable = false;
            },
            onResponseData: (_c, chunk) => {
              const before = size;
              size += chunk.length;
              if (before < RESPONSE_EXCERPT_BYTES) head.push(chunk.subarray(0, RESPONSE_EXCERPT_BYTES - before));
              if (size > MAX_RESPONSE_BYTES)
                fail(new ResponseTooLargeError(`Response body exceeds ${MAX_RESPONSE_BYTES} bytes`));
            },
            onResponseEnd: () => {
              const ok = statusCode !== null && statusCode >= 200 && statusCode < 300;
              finish({ ok, statusCode, responseExcerpt: excerpt(), retryAfter, error: null }, true);
            },
            onResponseError: (_c, error) => fail(error),
          },
        );
      } catch (error) {
        fail(error);
      }
    });
  }

  onModuleDestroy(): void {
    for (const pooled of [...this.all]) this.discard(pooled);
  }
}
