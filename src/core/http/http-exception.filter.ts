import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Injectable, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { randomUUID } from 'node:crypto';
import { redactKeys } from '../logging/log-redaction.js';
import { ApiError } from './api-error.js';
import { isDatabaseUnavailable } from './database-unavailable.js';
import { RouteMethods } from './route-methods.js';

/** The request path as the client sent it. */
const fullPath = (req: Request): string => req.originalUrl.split('?')[0];

/** The one place where any error becomes the API's error body. */
@Catch()
@Injectable()
export class HttpExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('HttpExceptionFilter');

  constructor(private readonly routes: RouteMethods) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const req = host.switchToHttp().getRequest<Request>();
    const res = host.switchToHttp().getResponse<Response>();
    const error = this.toApiError(exception, req);
    if (res.headersSent) return;
    this.send(error, res);
  }

  protected send(error: ApiError, res: Response): void {
    res.status(error.status).set(error.headers).json(error.toBody());
  }

  private toApiError(exception: unknown, req: Request): ApiError {
    if (exception instanceof ApiError) return exception;
    if (exception instanceof HttpException) return this.fromHttpException(exception, req);
    if (isDatabaseUnavailable(exception)) {
      this.logger.warn(
        `Database unavailable on ${req.method} ${redactKeys(fullPath(req))}: ${(exception as Error).message}`,
      );
      return new ApiError(503, 'unavailable', 'The service is temporarily unavailable; retry shortly', undefined, {
        'Retry-After': '5',
      });
    }
    const requestId = String(req.id ?? randomUUID()); // set by the request logger, echoed in x-request-id
    this.logger.error(
      `Unhandled error ${requestId} on ${req.method} ${redactKeys(fullPath(req))}`,
      exception instanceof Error ? exception.stack : String(exception),
    );
    return new ApiError(500, 'internal_server_error', `Internal server error (request ${requestId})`);
  }

  private fromHttpException(exception: HttpException, req: Request): ApiError {
    const status = exception.getStatus();
    if (status === 404) {
      const allow = this.routes.allowedOn(fullPath(req));
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

/** For a route whose 400 the spec defines as an empty text/plain body (GET /webhooks); other errors as usual. */
@Catch()
@Injectable()
export class EmptyTextBadRequestFilter extends HttpExceptionFilter {
  protected override send(error: ApiError, res: Response): void {
    if (error.status === 400) res.status(400).type('text/plain').send('');
    else super.send(error, res);
  }
}
