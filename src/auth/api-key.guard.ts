import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { ApiError } from '../core/http/api-error.js';
import { PortalLinks } from '../portal/portal-links.js';
import { hashToken, looksLikeSessionToken, PORTAL_SESSION_HEADER } from '../portal/portal-token.js';
import { API_KEY_HEADER, presentedKeyHash } from './api-key.js';
import { ApiKeysService } from './api-keys.service.js';
import type { Actor, AuthenticatedRequest } from './current-workspace.decorator.js';
import { API_KEY_ONLY, IS_PUBLIC } from './public.decorator.js';

const READS = new Set(['GET', 'HEAD']);

/**
 * Every route needs a valid, unrevoked `x-ac-api-key`, or a live portal session in `x-ac-portal-session`
 * (DESIGN 10), unless marked @Public(). The key wins when both are sent. A portal session is refused
 * (403) on @ApiKeyOnly() routes, and on every write when it is read-only.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly apiKeys: ApiKeysService,
    private readonly portalLinks: PortalLinks,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<unknown>(IS_PUBLIC, targets)) return true;
    const req = context.switchToHttp().getRequest<Request & AuthenticatedRequest>();
    if (req.headers[API_KEY_HEADER] === undefined && req.headers[PORTAL_SESSION_HEADER] !== undefined) {
      await this.portalSession(req, this.reflector.getAllAndOverride<boolean>(API_KEY_ONLY, targets) ?? false);
      return true;
    }
    const presented = req.headers[API_KEY_HEADER];
    if (typeof presented !== 'string' || presented.length === 0) {
      throw ApiError.notAuthenticated(`Missing API key: send it in the ${API_KEY_HEADER} header`);
    }
    const hash = presentedKeyHash(req);
    const key = hash === null ? null : await this.apiKeys.authenticate(hash);
    if (!key) throw ApiError.notAuthenticated('Unknown or revoked API key');
    this.signIn(req, key.workspace, { type: 'api_key', id: key.keyId });
    return true;
  }

  private async portalSession(req: Request & AuthenticatedRequest, apiKeyOnly: boolean): Promise<void> {
    const presented = req.headers[PORTAL_SESSION_HEADER];
    const session =
      typeof presented === 'string' && looksLikeSessionToken(presented)
        ? await this.portalLinks.authenticate(hashToken(presented))
        : null;
    if (!session) throw ApiError.notAuthenticated('Unknown or ended portal session (expired, or its link revoked)');
    if (apiKeyOnly) throw ApiError.forbidden('A portal session cannot do this: use an API key');
    if (session.readOnly && !READS.has(req.method)) throw ApiError.forbidden('This portal session is read-only');
    this.signIn(req, session.workspace, { type: 'portal_link', id: session.linkId });
  }

  private signIn(
    req: Request & AuthenticatedRequest,
    workspace: AuthenticatedRequest['workspace'],
    actor: Actor,
  ): void {
    req.workspace = workspace;
    req.actor = actor;
  }
}
