import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { ApiError } from '../core/http/api-error.js';
import { API_KEY_HEADER, presentedKeyHash } from './api-key.js';
import { ApiKeysService } from './api-keys.service.js';
import type { AuthenticatedRequest } from './current-workspace.decorator.js';
import { IS_PUBLIC } from './public.decorator.js';

/** Every route needs a valid, unrevoked `x-ac-api-key` unless marked @Public(). */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly apiKeys: ApiKeysService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()])) return true;
    const req = context.switchToHttp().getRequest<Request & AuthenticatedRequest>();
    const presented = req.headers[API_KEY_HEADER];
    if (typeof presented !== 'string' || presented.length === 0) {
      throw ApiError.notAuthenticated(`Missing API key: send it in the ${API_KEY_HEADER} header`);
    }
    const hash = presentedKeyHash(req);
    const key = hash === null ? null : await this.apiKeys.authenticate(hash);
    if (!key) throw ApiError.notAuthenticated('Unknown or revoked API key');
    req.workspace = key.workspace;
    req.apiKeyId = key.keyId;
    return true;
  }
}
