import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { Agent, request } from 'undici';
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

export const SSRF_RESOLVER = Symbol('SSRF_RESOLVER');

class ResponseTooLargeError extends Error {}

async function readCapped(body: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_RESPONSE_BYTES) throw new ResponseTooLargeError(`Response body exceeds ${MAX_RESPONSE_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The first 2 KiB as text Postgres can store: no NUL, no character cut in half. */
export function excerptOf(raw: Buffer): string {
  const text = raw.subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8').replaceAll('\0', '\uFFFD');
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= RESPONSE_EXCERPT_BYTES) return text;
  // stream: true holds back a trailing partial character instead of emitting U+FFFD for it.
  return new TextDecoder().decode(bytes.subarray(0, RESPONSE_EXCERPT_BYTES), { stream: true });
}

function describe(error: unknown, timeoutMs: number): string {
  if (error instanceof ForbiddenDestinationError || error instanceof ResponseTooLargeError) return error.message;
  const e = error as { name?: string; code?: string; message?: string; cause?: unknown };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `Timed out after ${timeoutMs} ms`;
  if (e.cause instanceof ForbiddenDestinationError) return e.cause.message;
  return [e.code, e.message].filter(Boolean).join(': ') || 'Request failed';
}

/** POSTs one signed payload; never throws: every outcome is a SendResult. */
@Injectable()
export class WebhookSender implements OnModuleDestroy {
  private readonly agent: Agent;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(SSRF_RESOLVER) resolver: Resolver | undefined,
  ) {
    this.agent = new Agent({
      keepAliveTimeout: 30_000,
      connections: 256,
      connect: config.allowPrivateTargets
        ? { timeout: config.deliveryTimeoutMs }
        : {
            timeout: config.deliveryTimeoutMs,
            lookup: guardedLookup(resolver),
          },
    });
  }

  async send(url: string, body: string, headers: Record<string, string>): Promise<SendResult> {
    const started = performance.now();
    const timeoutMs = this.config.deliveryTimeoutMs;
    const done = (result: Omit<SendResult, 'durationMs'>): SendResult => ({
      ...result,
      durationMs: Math.round(performance.now() - started),
    });
    try {
      if (!this.config.allowPrivateTargets) assertPublicLiteral(new URL(url).hostname);
      const response = await request(url, {
        dispatcher: this.agent,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': USER_AGENT, ...headers },
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
      const statusCode = response.statusCode;
      const header = response.headers['retry-after'];
      const retryAfter = Array.isArray(header) ? header[0] : header;
      try {
        const raw = await readCapped(response.body);
        const excerpt = excerptOf(raw);
        const ok = statusCode >= 200 && statusCode < 300;
        return done({ ok, statusCode, responseExcerpt: excerpt, retryAfter, error: null });
      } catch (error) {
        response.body.destroy();
        return done({ ok: false, statusCode, responseExcerpt: null, retryAfter, error: describe(error, timeoutMs) });
      }
    } catch (error) {
      return done({
        ok: false,
        statusCode: null,
        responseExcerpt: null,
        retryAfter: undefined,
        error: describe(error, timeoutMs),
        ...(ForbiddenDestinationError.isRefusal(error) && { refused: true }),
      });
    }
  }

  async onModuleDestroy(): Promise<void> {
    await this.agent.close();
  }
}
