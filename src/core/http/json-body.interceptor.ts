import { CallHandler, ExecutionContext, Injectable, NestInterceptor, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { from, switchMap, type Observable } from 'rxjs';
import { readJsonBody } from '../security/body-limit.js';
import { ApiError } from './api-error.js';

export const BODY_LIMIT_BYTES = 1024 * 1024;
export const SUBMISSION_BODY_LIMIT_BYTES = 256 * 1024;

const BODY_LIMIT = Symbol('BODY_LIMIT');

/** The largest JSON body a controller or route takes, when it is not BODY_LIMIT_BYTES. */
export const BodyLimit = (bytes: number) => SetMetadata(BODY_LIMIT, bytes);

const hasBody = (req: Request): boolean =>
  req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

/**
 * Reads a route's JSON body after the guards (an unauthenticated or rate-limited request is never
 * read) and inside the route's own filters, so a route may answer a bad body its own way.
 */
@Injectable()
export class JsonBodyInterceptor implements NestInterceptor {
  constructor(private readonly reflector: Reflector) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const req = context.switchToHttp().getRequest<Request>();
    // No framing, no body (body-parser reads nothing either): a GET goes on in the same tick.
    if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) {
      return next.handle();
    }
    const res = context.switchToHttp().getResponse<Response>();
    const limit =
      this.reflector.getAllAndOverride<number>(BODY_LIMIT, [context.getHandler(), context.getClass()]) ??
      BODY_LIMIT_BYTES;
    return from(this.read(req, res, limit)).pipe(switchMap(() => next.handle()));
  }

  private async read(req: Request, res: Response, limit: number): Promise<void> {
    // A request with a body must say it is JSON; anything else is refused before parsing.
    if (['POST', 'PUT', 'PATCH', 'DELETE'].includes(req.method) && hasBody(req) && !req.is('application/json')) {
      throw ApiError.invalidField('content-type', 'must be application/json');
    }
    await readJsonBody(req, res, limit);
    // Every JSON body this API takes is an object; body-parser 2 leaves req.body undefined without a body.
    const body: unknown = req.body;
    if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body))) {
      throw ApiError.badRequest('Request body must be a JSON object');
    }
  }
}
