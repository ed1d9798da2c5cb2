import type { Request, RequestHandler, Response } from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Level, Logger } from 'pino';
import { pinoHttp } from 'pino-http';
import type { AuthenticatedRequest } from '../../auth/current-workspace.decorator.js';
import { requestRoute } from '../http/request-route.js';

export const REQUEST_ID_HEADER = 'x-request-id';
// An incoming id is kept only when it is short and plain, so a client cannot inject into log lines.
const ACCEPTED_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
// Probes and scrapes come every few seconds; their lines appear only at LOG_LEVEL=debug.
const QUIET_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

type HttpRequest = Request & Partial<AuthenticatedRequest>;

function requestId(req: IncomingMessage, res: ServerResponse): string {
  const incoming = req.headers[REQUEST_ID_HEADER];
  const id = typeof incoming === 'string' && ACCEPTED_REQUEST_ID.test(incoming) ? incoming : randomUUID();
  res.setHeader(REQUEST_ID_HEADER, id);
  return id;
}

function level(req: IncomingMessage, res: ServerResponse, error?: Error): Level {
  if (QUIET_PATHS.has((req as Request).path)) return 'debug';
  return error || res.statusCode >= 500 ? 'error' : 'info';
}

const describe = (req: IncomingMessage, res: ServerResponse) =>
  `${req.method} ${(req as Request).originalUrl} ${res.statusCode}`;

/** One line per request: id, method, url, route, status, duration and the workspace that made it. */
export function requestLogger(logger: Logger): RequestHandler {
  const middleware = pinoHttp({
    logger,
    genReqId: requestId,
    customLogLevel: level,
    // Called when the request starts and again when it ends; only the end knows route and workspace.
    customProps: (req, res) => {
      if (!res.headersSent) return {};
      const { workspace } = req as HttpRequest;
      return { route: requestRoute(req as Request), ...(workspace ? { workspaceId: workspace.id } : {}) };
    },
    customSuccessMessage: (req, res, ms) => `${describe(req, res)} ${ms}ms`,
    customErrorMessage: (req, res) => describe(req, res),
    // The exception filter logs a failure's cause and stack; here the message is enough.
    customErrorObject: (_req, _res, error, fields) => ({ ...fields, err: undefined, error: error.message }),
  });
  return (req: Request, res: Response, next) => middleware(req, res, next);
}
