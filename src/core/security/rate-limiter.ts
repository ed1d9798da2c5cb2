import { Inject, Injectable } from '@nestjs/common';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { presentedKeyHash } from '../../auth/api-key.js';
import type { AppConfig } from '../config/config.js';
import { APP_CONFIG } from '../config/config.module.js';
import { ApiError } from '../http/api-error.js';
import { RateLimitCounters } from './rate-limit-counters.js';

interface Window {
  name: string;
  ms: number;
  limit: number;
}

/**
 * Who a request is counted for: the SHA-256 of its API key (never the key itself), or its client IP
 * when it carries no well-formed key.
 */
export function rateLimitTracker(req: Request): string {
  const hash = presentedKeyHash(req);
  if (hash !== null) return `key:${hash}`;
  return `ip:${req.ip ?? req.socket.remoteAddress ?? 'unknown'}`;
}

/**
 * Per-key request limits (RATE_LIMIT_PER_MINUTE, RATE_LIMIT_PER_SECOND; 0 turns one off), checked
 * before authentication and body parsing, so neither key guessing nor large bodies escape them.
 * Mounted on the API's controllers only: probes and scrapes are never limited.
 */
@Injectable()
export class RateLimiter {
  private readonly windows: Window[];

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly counters: RateLimitCounters,
  ) {
    this.windows = [
      { name: 'second', ms: 1_000, limit: config.rateLimit.perSecond },
      { name: 'minute', ms: 60_000, limit: config.rateLimit.perMinute },
    ].filter((w) => w.limit > 0);
  }

  readonly middleware: RequestHandler = (req: Request, res: Response, next: NextFunction) => {
    if (this.windows.length === 0) return next();
    this.check(req, res).then(() => next(), next);
  };

  private async check(req: Request, res: Response): Promise<void> {
    const tracker = rateLimitTracker(req);
    for (const window of this.windows) {
      const { hits, resetMs } = await this.counters.hit(window.name, tracker, window.ms);
      const resetSeconds = Math.max(1, Math.ceil(resetMs / 1000));
      // The headers describe the longest window, the one a client paces itself by.
      if (window === this.windows.at(-1)) {
        res.set({
          'X-RateLimit-Limit': String(window.limit),
          'X-RateLimit-Remaining': String(Math.max(0, window.limit - hits)),
          'X-RateLimit-Reset': String(resetSeconds),
        });
      }
      if (hits > window.limit) {
        throw new ApiError(
          429,
          'rate_limited',
          `Rate limit of ${window.limit} requests per ${window.name} exceeded; retry in ${resetSeconds} s`,
          undefined,
          { 'Retry-After': String(resetSeconds) },
        );
      }
    }
  }
}
