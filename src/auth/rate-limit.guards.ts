import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { ApiError } from '../core/http/api-error.js';
import { RateLimiter, type RuleCount, type Subjects } from '../core/security/rate-limiter.js';
import { presentedKeyHash } from './api-key.js';
import { ApiKeysService } from './api-keys.service.js';
import type { AuthenticatedRequest } from './current-workspace.decorator.js';
import { IS_PUBLIC, PUBLIC_PER_IP_LIMITED } from './public.decorator.js';

/** Set on a request whose key was counted with its IP, before authentication: not counted again after it. */
const COUNTED_EARLY = Symbol('keyCountedEarly');
type CountedRequest = Request & { [COUNTED_EARLY]?: true };

function rateLimited(refused: RuleCount): ApiError {
  const retryAfter = String(refused.resetSeconds);
  const window = refused.name === 'second' ? 'second' : 'minute';
  return new ApiError(
    429,
    'rate_limited',
    `Rate limit of ${refused.limit} requests per ${window} exceeded; retry in ${retryAfter} s`,
    undefined,
    { 'Retry-After': retryAfter },
  );
}

/** Counts a request for its subjects in one call; the per-key minute window is told in X-RateLimit-*. */
@Injectable()
abstract class RateLimitGuard implements CanActivate {
  constructor(
    protected readonly reflector: Reflector,
    protected readonly limiter: RateLimiter,
  ) {}

  abstract canActivate(context: ExecutionContext): Promise<boolean>;

  protected publicRoute(context: ExecutionContext): boolean | typeof PUBLIC_PER_IP_LIMITED {
    return this.reflector.getAllAndOverride(IS_PUBLIC, [context.getHandler(), context.getClass()]) ?? false;
  }

  protected async count(context: ExecutionContext, subjects: Subjects): Promise<boolean> {
    const counts = await this.limiter.count(subjects);
    const minute = counts.find((c) => c.name === 'minute');
    if (minute) {
      const res = context.switchToHttp().getResponse<Response>();
      res.setHeader('X-RateLimit-Limit', String(minute.limit));
      res.setHeader('X-RateLimit-Remaining', String(Math.max(0, minute.limit - minute.hits)));
      res.setHeader('X-RateLimit-Reset', String(minute.resetSeconds));
    }
    const refused = counts.find((c) => c.blocked);
    if (refused) throw rateLimited(refused);
    return true;
  }
}

/**
 * Runs before authentication. Counts the client IP, so a client presenting a new made-up key on every
 * request is limited here; probes and scrapes (public routes) are never limited, the portal link exchange
 * (public, but checking a token) is. A key this process has already authenticated (held in the key cache
 * until it is revoked) is counted in the same call: the usual request makes one round trip to Redis.
 */
@Injectable()
export class IpRateLimitGuard extends RateLimitGuard {
  constructor(
    reflector: Reflector,
    limiter: RateLimiter,
    private readonly apiKeys: ApiKeysService,
  ) {
    super(reflector, limiter);
  }

  canActivate(context: ExecutionContext): Promise<boolean> {
    const scope = this.publicRoute(context);
    if (scope === true) return Promise.resolve(true);
    const req = context.switchToHttp().getRequest<CountedRequest>();
    const subjects: Subjects = { ip: `ip:${req.ip ?? req.socket.remoteAddress ?? 'unknown'}` };
    const hash = scope === false && this.limiter.limits('key') ? presentedKeyHash(req) : null;
    if (hash !== null && this.apiKeys.isKnown(hash)) {
      subjects.key = `key:${hash}`;
      req[COUNTED_EARLY] = true;
    }
    return this.count(context, subjects);
  }
}

/**
 * Runs after authentication: counts an authenticated request not yet counted with its IP (a key's first
 * request in this process, a portal session), under the SHA-256 of the key (never the key) or a portal
 * session's link id. A key that fails authentication counts nothing.
 */
@Injectable()
export class KeyRateLimitGuard extends RateLimitGuard {
  canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<CountedRequest & Partial<AuthenticatedRequest>>();
    if (this.publicRoute(context) !== false || !req.actor || req[COUNTED_EARLY]) return Promise.resolve(true);
    const key = req.actor.type === 'api_key' ? `key:${presentedKeyHash(req)}` : `portal:${req.actor.id}`;
    return this.count(context, { key });
  }
}
