import { CallHandler, ExecutionContext, Injectable, Logger, NestInterceptor, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { setTimeout as sleep } from 'node:timers/promises';
import { from, lastValueFrom, type Observable } from 'rxjs';
import type { AuthenticatedRequest } from '../auth/current-workspace.decorator.js';
import { ApiError, type ErrorBody } from '../core/http/api-error.js';
import { API_PREFIX } from '../core/http/configure-app.js';
import {
  bodyHash,
  IDEMPOTENCY_KEY_HEADER,
  idempotencyKeyOf,
  REPLAYED_HEADER,
  sameRequest,
  type IdempotentRequest,
} from './idempotency-key.js';
import type { IdempotencyKeyEntity } from './idempotency-key.entity.js';
import { IdempotencyKeysService, type KeptAnswer } from './idempotency-keys.service.js';

/** How long a repeat waits for the first request to answer before it is told to retry (409). */
export const WAIT_FOR_FIRST_MS = 10_000;
const MAX_PATH_LENGTH = 2048;
/** The writes (DESIGN 7.6; PATCH /webhooks/{id} of DESIGN 10 too): DELETE is idempotent by itself. */
const IDEMPOTENT_METHODS = new Set(['POST', 'PATCH']);

const reused = () =>
  new ApiError(
    400,
    'idempotency_key_reused',
    'Idempotency-Key: already used for another request (method, path or body differ); use a new key',
    [{ field: 'Idempotency-Key', message: 'already used for another request' }],
  );

const inProgress = () =>
  new ApiError(
    409,
    'idempotency_key_in_progress',
    'A request with this Idempotency-Key is still being processed; retry shortly',
    undefined,
    { 'Retry-After': '1' },
  );

const KEPT_BODY = Symbol('idempotency:keptBody');
type KeepBody = (body: never) => unknown;

/** What of the route's answer is kept for a replay, when not all of it may be stored (a token shown once). */
export const KeepForReplay = <T>(keep: (body: T) => unknown) => SetMetadata(KEPT_BODY, keep);

/** 5xx answers (a 503 from a database timeout included) are not kept: the client's retry runs again. */
function answerOf(outcome: { body: unknown } | { error: unknown }, status: number): KeptAnswer | null {
  if ('body' in outcome) {
    return status < 500
      ? { statusCode: status, body: outcome.body === undefined ? null : JSON.stringify(outcome.body) }
      : null;
  }
  const { error } = outcome;
  return error instanceof ApiError && error.status < 500
    ? { statusCode: error.status, body: JSON.stringify(error.toBody()) }
    : null;
}

/**
 * DESIGN 7.6 for every POST and PATCH under the API prefix: runs after the guards (the workspace is known) and
 * after JsonBodyInterceptor (the body is parsed; HttpPipelineModule's interceptors are registered first).
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  private readonly logger = new Logger('Idempotency');

  constructor(
    private readonly keys: IdempotencyKeysService,
    private readonly reflector: Reflector,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const req = context.switchToHttp().getRequest<Request & Partial<AuthenticatedRequest>>();
    const path = req.originalUrl.split('?')[0];
    if (!IDEMPOTENT_METHODS.has(req.method) || !req.workspace || !path.startsWith(`/${API_PREFIX}/`)) {
      return next.handle();
    }
    const key = idempotencyKeyOf(req.headers[IDEMPOTENCY_KEY_HEADER]);
    // No route takes an id that long, so such a path is a 404 whatever is kept; it would not fit the column.
    if (key === null || path.length > MAX_PATH_LENGTH) return next.handle();
    const request = { workspaceId: req.workspace.id, key, method: req.method, path, bodyHash: bodyHash(req.body) };
    const res = context.switchToHttp().getResponse<Response>();
    const keep = this.reflector.get<KeepBody | undefined>(KEPT_BODY, context.getHandler());
    return from(this.once(request, res, next, keep));
  }

  private async once(request: IdempotentRequest, res: Response, next: CallHandler, keep?: KeepBody): Promise<unknown> {
    const deadline = Date.now() + WAIT_FOR_FIRST_MS;
    for (let delay = 20; ; delay = Math.min(delay * 2, 250)) {
      const claimedAt = await this.keys.claim(request);
      if (claimedAt) return this.first(request, claimedAt, res, next, keep);
      const kept = await this.keys.find(request.workspaceId, request.key);
      if (!kept) continue; // released (a 5xx) or expired and purged since the claim: claim again
      if (!sameRequest(kept, request)) throw reused();
      if (kept.statusCode !== null) return this.replay(kept, res);
      if (Date.now() >= deadline) throw inProgress();
      await sleep(delay);
    }
  }

  /** Runs the request and keeps its answer; the handler's promise is awaited here, so a client gone away does not leave the key unanswered. */
  private async first(
    request: IdempotentRequest,
    claimedAt: Date,
    res: Response,
    next: CallHandler,
    keep: KeepBody = (body) => body,
  ): Promise<unknown> {
    let outcome: { body: unknown } | { error: unknown };
    try {
      outcome = { body: await lastValueFrom(next.handle(), { defaultValue: undefined }) };
    } catch (error) {
      outcome = { error };
    }
    const answer = answerOf('body' in outcome ? { body: keep(outcome.body as never) } : outcome, res.statusCode);
    try {
      if (answer) await this.keys.answer(request, claimedAt, answer);
      else await this.keys.release(request, claimedAt);
    } catch (error) {
      // The request itself is done: answer it; a repeat then waits, and takes the key over once abandoned.
      this.logger.warn(`Could not keep the answer of ${request.method} ${request.path}: ${(error as Error).message}`);
    }
    if ('error' in outcome) throw outcome.error;
    return outcome.body;
  }

  private replay(kept: IdempotencyKeyEntity, res: Response): unknown {
    res.setHeader(REPLAYED_HEADER, 'true');
    const body: unknown = kept.responseBody === null ? undefined : JSON.parse(kept.responseBody);
    if (kept.statusCode! < 400) {
      // Nest set the route's status before interceptors ran; a handler may have chosen another (200 for a
      // recovery's dry run, 202 otherwise), so the kept one is set again.
      res.status(kept.statusCode!);
      return body;
    }
    const { error } = body as ErrorBody;
    throw new ApiError(kept.statusCode!, error.code, error.message, error.details, { [REPLAYED_HEADER]: 'true' });
  }
}
