import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { mountQueueDashboard } from '../../admin/queue-dashboard.js';
import { HttpMetrics } from '../../metrics/http.metrics.js';
import { setupOpenApi } from '../../openapi/openapi.js';
import { AppLogger } from '../logging/app-logger.js';
import { requestLogger } from '../logging/request-logger.js';
import { jsonBody } from '../security/body-limit.js';
import { answerMalformedRequests } from '../security/malformed-requests.js';
import { RateLimiter } from '../security/rate-limiter.js';
import { securityHeaders } from '../security/security-headers.js';
import { ApiError } from './api-error.js';
import { fullPath } from './allowed-methods.js';
import { HttpExceptionFilter } from './http-exception.filter.js';
import { createValidationPipe } from './validation.js';

export const API_PREFIX = 'api/v1';
/** Routes served outside `/api/v1`; any other path there is unknown. Add a new unprefixed route here. */
export const UNPREFIXED_PATHS = ['healthz', 'readyz', 'metrics'];
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

/** Nest's not-found handler only covers the prefix; elsewhere Express would answer with an HTML page. */
function notFoundOutsidePrefix(req: Request, _res: Response, next: NextFunction): void {
  const path = fullPath(req).toLowerCase(); // Express matches routes case-insensitively
  const known = [API_PREFIX, ...UNPREFIXED_PATHS].some((p) => path === `/${p}` || path.startsWith(`/${p}/`));
  next(known ? undefined : ApiError.notFound(`No route for ${req.method} ${fullPath(req)}`));
}

/** Every JSON body this API takes is an object; an array or a bare value is refused. */
function requireObjectBody(req: Request, _res: Response, next: NextFunction): void {
  // body-parser 2 leaves req.body undefined when there was no body, and sets no `_body` flag.
  const parsed = req.body !== undefined;
  if (parsed && (typeof req.body !== 'object' || req.body === null || Array.isArray(req.body))) {
    next(ApiError.badRequest('Request body must be a JSON object'));
    return;
  }
  next();
}

/** Everything the API process and the e2e tests share: logging, metrics, prefix, body parsing, validation, errors. */
export function configureApp(app: INestApplication): void {
  const http = app as NestExpressApplication;
  const logger = app.get(AppLogger);
  http.useLogger(logger);
  http.disable('x-powered-by');
  http.set('query parser', 'simple');
  http.use(requestLogger(logger.pino)); // first: every later step, errors included, has the request id
  http.use(app.get(HttpMetrics).middleware);
  answerMalformedRequests(http.getHttpServer()); // what Node's parser refuses gets the JSON error body too
  http.use(securityHeaders()); // helmet, before any route so error responses carry the headers too
  http.use(app.get(RateLimiter).middleware); // before auth and body parsing
  mountQueueDashboard(http);
  http.use(notFoundOutsidePrefix);
  http.use(requireJsonContentType);
  http.use(jsonBody({ defaultBytes: BODY_LIMIT_BYTES, submissionBytes: SUBMISSION_BODY_LIMIT_BYTES }));
  http.use(requireObjectBody);
  http.setGlobalPrefix(API_PREFIX, { exclude: UNPREFIXED_PATHS });
  setupOpenApi(http, API_PREFIX); // the document and the docs page, no key needed
  http.useGlobalPipes(createValidationPipe());
  http.useGlobalFilters(new HttpExceptionFilter());
}
