import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { randomUUID } from 'node:crypto';
import { pino, type Level, type Logger } from 'pino';
import type { AuthenticatedRequest } from '../../auth/current-workspace.decorator.js';
import { requestRoute } from '../http/request-route.js';

export const REQUEST_ID_HEADER = 'x-request-id';
// An incoming id is kept only when it is short and plain, so a client cannot inject into log lines.
const ACCEPTED_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
// Probes and scrapes come every few seconds; their lines appear only at LOG_LEVEL=debug.
const QUIET_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

declare module 'express-serve-static-core' {
  interface Request {
    /** This request's id, echoed in x-request-id and quoted by a 500. */
    id?: string;
  }
}

type HttpRequest = Request & Partial<AuthenticatedRequest>;

function requestId(req: Request, res: Response): string {
  const incoming = req.headers[REQUEST_ID_HEADER];
  const id = typeof incoming === 'string' && ACCEPTED_REQUEST_ID.test(incoming) ? incoming : randomUUID();
  res.setHeader(REQUEST_ID_HEADER, id);
  return id;
}

function level(req: Request, res: Response): Level {
  if (QUIET_PATHS.has(req.path)) return 'debug';
  return res.statusCode >= 500 ? 'error' : 'info';
}

/**
 * One line per request once it ends: id, method, url, headers (credentials redacted by the root
 * logger), route, status, duration and the workspace that made it. Nothing is built for a line
 * whose level is off, so LOG_LEVEL=warn costs the hot path one id and one listener.
 */
export function requestLogger(logger: Logger): RequestHandler {
  return (req: HttpRequest, res: Response, next: NextFunction) => {
    const startedAt = Date.now();
    req.id = requestId(req, res);
    const done = () => {
      res.removeListener('finish', done);
      res.removeListener('close', done);
      const lineLevel = level(req, res);
      if (!logger.isLevelEnabled(lineLevel)) return;
      const responseTime = Date.now() - startedAt;
      const status = res.writableFinished ? String(res.statusCode) : 'aborted by the client';
      logger[lineLevel](
        {
          req: pino.stdSerializers.req(req),
          route: requestRoute(req),
          ...(req.workspace ? { workspaceId: req.workspace.id } : {}),
          res: pino.stdSerializers.res(res),
          responseTime,
          ...(res.statusCode >= 500 ? { error: `failed with status code ${res.statusCode}` } : {}),
        },
        `${req.method} ${req.originalUrl} ${status}${lineLevel === 'error' ? '' : ` ${responseTime}ms`}`,
      );
    };
    res.on('finish', done);
    res.on('close', done);
    next();
  };
}
