import { ExecutionContext, Injectable } from '@nestjs/common';
import type { ThrottlerLimitDetail } from '@nestjs/throttler';
import type { Request } from 'express';
import { ApiError } from '../core/http/api-error.js';
import { PER_IP, PER_KEY_MINUTE, PER_KEY_SECOND } from '../core/security/rate-limit.module.js';
import { presentedKeyHash } from './api-key.js';
import type { AuthenticatedRequest } from './current-workspace.decorator.js';
import { IS_PUBLIC, PUBLIC_PER_IP_LIMITED } from './public.decorator.js';

const { ThrottlerGuard } = await import('@nestjs/throttler'); // see core/security/rate-limit.module.ts

const windowName = (ttlMs: number) => (ttlMs === 1000 ? 'second' : 'minute');

/** A ThrottlerGuard for some of the configured throttlers; the 429 is the API's error body with Retry-After. */
abstract class ScopedThrottlerGuard extends ThrottlerGuard {
  protected abstract readonly names: string[];

  override async onModuleInit(): Promise<void> {
    await super.onModuleInit();
    this.throttlers = this.throttlers.filter((t) => this.names.includes(t.name!));
  }

  protected override generateKey(_context: ExecutionContext, tracker: string, name: string): string {
    return `${name}:${tracker}`;
  }

  protected override async throwThrottlingException(
    context: ExecutionContext,
    detail: ThrottlerLimitDetail,
  ): Promise<void> {
    const res = context.switchToHttp().getResponse<{ setHeader(name: string, value: string): void }>();
    if (detail.key.startsWith(`${PER_KEY_MINUTE}:`)) {
      res.setHeader(`${this.headerPrefix}-Limit`, String(detail.limit));
      res.setHeader(`${this.headerPrefix}-Remaining`, '0');
      res.setHeader(`${this.headerPrefix}-Reset`, String(detail.timeToExpire));
    }
    const retryAfter = String(detail.timeToBlockExpire);
    throw new ApiError(
      429,
      'rate_limited',
      `Rate limit of ${detail.limit} requests per ${windowName(detail.ttl)} exceeded; retry in ${retryAfter} s`,
      undefined,
      { 'Retry-After': retryAfter },
    );
  }

  protected publicRoute(context: ExecutionContext): boolean | typeof PUBLIC_PER_IP_LIMITED {
    return this.reflector.getAllAndOverride(IS_PUBLIC, [context.getHandler(), context.getClass()]) ?? false;
  }
}

/**
 * Requests per client IP, counted before authentication: a client presenting a new made-up key on
 * every request is limited here. Probes and scrapes (public routes) are never limited; the portal link
 * exchange, public but checking a token, is.
 */
@Injectable()
export class IpThrottlerGuard extends ScopedThrottlerGuard {
  protected readonly names = [PER_IP];

  protected override shouldSkip(context: ExecutionContext): Promise<boolean> {
    return Promise.resolve(this.publicRoute(context) === true);
  }

  protected override getTracker(req: Request): Promise<string> {
    return Promise.resolve(`ip:${req.ip ?? req.socket.remoteAddress ?? 'unknown'}`);
  }
}

/**
 * Requests per API key, counted after authentication under the SHA-256 of the key (never the key); a
 * portal session's under the id of its link.
 */
@Injectable()
export class KeyThrottlerGuard extends ScopedThrottlerGuard {
  protected readonly names = [PER_KEY_MINUTE, PER_KEY_SECOND];

  protected override shouldSkip(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<Request & Partial<AuthenticatedRequest>>();
    return Promise.resolve(this.publicRoute(context) !== false || !req.workspace);
  }

  protected override getTracker(req: Request & AuthenticatedRequest): Promise<string> {
    return Promise.resolve(req.actor.type === 'api_key' ? `key:${presentedKeyHash(req)}` : `portal:${req.actor.id}`);
  }
}
