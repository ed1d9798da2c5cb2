import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { randomUUID } from 'node:crypto';
import { ApiError } from './api-error.js';
import { allowedMethods, fullPath } from './allowed-methods.js';
import { isDatabaseUnavailable } from './database-unavailable.js';

const BODY_PARSER_ERRORS: Record<string, (cause: { limit?: number }) => ApiError> = {
  'entity.parse.failed': () => ApiError.badRequest('Malformed JSON in request body'),
  'entity.too.large': (cause) =>
    new ApiError(413, 'payload_too_large', `Request body exceeds the limit of ${cause.limit} bytes`),
  'encoding.unsupported': () => ApiError.badRequest('Unsupported content encoding'),
  'charset.unsupported': () => ApiError.badRequest('Unsupported charset; send UTF-8 JSON'),
  'request.aborted': () => ApiError.badRequest('Request aborted'),
  'request.size.invalid': () => ApiError.badRequest('Request size did not match Content-Length'),
};

/** The one place where any error becomes the API's error body. */
@Catch()
export class HttpExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('HttpExceptionFilter');

  catch(exception: unknown, host: ArgumentsHost): void {
    const req = host.switchToHttp().getRequest<Request>();
    const res = host.switchToHttp().getResponse<Response>();
    const error = this.toApiError(exception, req);
    if (res.headersSent) return;
    // The spec: a 400 on GET /webhooks is text/plain with an empty body.
    if (error.status === 400 && req.method === 'GET' && /^\/api\/v1\/webhooks\/?$/.test(fullPath(req))) {
      res.status(400).type('text/plain').send('');
      return;
    }
    res.status(error.status).set(error.headers).json(error.toBody());
  }

  private toApiError(exception: unknown, req: Request): ApiError {
    if (exception instanceof ApiError) return exception;
    if (exception instanceof HttpException) return this.fromHttpException(exception, req);
    if (isDatabaseUnavailable(exception)) {
      this.logger.warn(`Database unavailable on ${req.method} ${fullPath(req)}: ${(exception as Error).message}`);
      return new ApiError(503, 'unavailable', 'The service is temporarily unavailable; retry shortly', undefined, {
        'Retry-After': '5',
      });
    }
    const requestId = String(req.id ?? randomUUID()); // set by the request logger, echoed in x-request-id
    this.logger.error(
      `Unhandled error ${requestId} on ${req.method} ${fullPath(req)}`,
      exception instanceof Error ? exception.stack : String(exception),
    );
    const error = new ApiError(500, 'internal_server_error', `Internal server error (request ${requestId})`);
    return error;
  }

  private fromHttpException(exception: HttpException, req: Request): ApiError {
    const cause = exception.cause as { type?: string; limit?: number } | undefined;
    const mapped = cause?.type ? BODY_PARSER_ERRORS[cause.type] : undefined;
    if (mapped) return mapped(cause!);
    const status = exception.getStatus();
    if (status === 404) {
      const allow = allowedMethods(req);
      if (allow.length > 0) {
        return new ApiError(405, 'method_not_allowed', `${req.method} is not allowed on this path`, undefined, {
          Allow: allow.join(', '),
        });
      }
      return ApiError.notFound(`No route for ${req.method} ${fullPath(req)}`);
    }
    if (status === 400) return ApiError.badRequest(exception.message);
    if (status === 413) return new ApiError(413, 'payload_too_large', 'Request body too large');
    if (status === 429) return new ApiError(429, 'rate_limited', 'Too many requests');
    return new ApiError(status, status >= 500 ? 'internal_server_error' : 'bad_request', exception.message);
  }
}
