import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import express, { type NextFunction, type Request, type Response } from 'express';
import { ApiError } from './api-error.js';
import { HttpExceptionFilter } from './http-exception.filter.js';
import { createValidationPipe } from './validation.js';

export const API_PREFIX = 'api/v1';
export const BODY_LIMIT_BYTES = 1024 * 1024;
export const SUBMISSION_BODY_LIMIT_BYTES = 256 * 1024;

function hasBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/** A request with a body must say it is JSON; anything else is refused before parsing. */
function requireJsonContentType(req: Request, _res: Response, next: NextFunction): void {
  if (['POST', 'PUT', 'PATCH', 'DELETE'].includes(req.method) && hasBody(req) && !req.is('application/json')) {
    next(ApiError.invalidField('content-type', 'must be application/json'));
    return;
  }
  next();
}

/** Every JSON body this API takes is an object; an array or a bare value is refused. */
function requireObjectBody(req: Request, _res: Response, next: NextFunction): void {
  const parsed = (req as Request & { _body?: boolean })._body === true;
  if (parsed && (typeof req.body !== 'object' || req.body === null || Array.isArray(req.body))) {
    next(ApiError.badRequest('Request body must be a JSON object'));
    return;
  }
  next();
}

/** Everything the API process and the e2e tests share: prefix, body parsing, validation, errors. */
export function configureApp(app: INestApplication): void {
  const http = app as NestExpressApplication;
  http.disable('x-powered-by');
  http.set('query parser', 'simple');
  http.use(requireJsonContentType);
  http.use(
    `/${API_PREFIX}/calculators/:calculatorId/submissions`,
    express.json({ limit: SUBMISSION_BODY_LIMIT_BYTES }),
  );
  http.use(express.json({ limit: BODY_LIMIT_BYTES }));
  http.use(requireObjectBody);
  http.setGlobalPrefix(API_PREFIX, { exclude: ['healthz', 'readyz', 'metrics'] });
  http.useGlobalPipes(createValidationPipe());
  http.useGlobalFilters(new HttpExceptionFilter());
  http.enableShutdownHooks();
}
