import { Module } from '@nestjs/common';
import type { Request } from 'express';
import { LoggerModule, type Params } from 'nestjs-pino';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pino, type DestinationStream, type Level } from 'pino';
import type { Options } from 'pino-http';
import type { AppConfig } from '../config/config.js';
import { APP_CONFIG } from '../config/config.module.js';
import { requestRoute } from '../http/request-route.js';
import { censorSecrets, redactKeys, redactUrl } from './log-redaction.js';
import { prettyTransport } from './pretty-transport.js';

/** Where log lines go; undefined = stdout. Tests override it to read the lines. */
export const LOG_DESTINATION = Symbol('LOG_DESTINATION');

const REQUEST_ID_HEADER = 'x-request-id';
// An incoming id is kept only when it is short and plain, so a client cannot inject into log lines.
const ACCEPTED_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
// Probes come every few seconds; their lines appear only at LOG_LEVEL=debug.
const QUIET_PATHS = new Set(['/healthz', '/readyz']);

// `workspace`: set by auth's key guard on an authenticated request.
type HttpRequest = IncomingMessage & Partial<Request> & { workspace?: { id: string } };

function requestId(req: IncomingMessage, res: ServerResponse): string {
  const incoming = req.headers[REQUEST_ID_HEADER];
  const usable =
    typeof incoming === 'string' && ACCEPTED_REQUEST_ID.test(incoming) && redactKeys(incoming) === incoming;
  const id = usable ? incoming : randomUUID();
  res.setHeader(REQUEST_ID_HEADER, id);
  return id;
}

function level(req: HttpRequest, res: ServerResponse): Level {
  if (QUIET_PATHS.has(req.path ?? '')) return 'debug';
  if (res.statusCode >= 500) return 'error';
  return res.statusCode >= 400 ? 'warn' : 'info';
}

/**
 * The request line's level, or `silent` when LOG_LEVEL leaves it out: pino-http then skips the line
 * at once, where a disabled level would still build its object and message (the route, the redacted
 * url) on every request.
 */
function levelWithin(threshold: string): (req: HttpRequest, res: ServerResponse) => Level | 'silent' {
  const least = pino.levels.values[threshold] ?? Infinity; // LOG_LEVEL=silent: no level is enough
  return (req, res) => {
    const chosen = level(req, res);
    return pino.levels.values[chosen] >= least ? chosen : 'silent';
  };
}

const UNKNOWN = null; // a field the request does not have (no workspace before authentication, say)
const USER_AGENT_MAX = 256;

function bytesSent(res: ServerResponse): number | null {
  const length = res.getHeader('content-length');
  return length === undefined ? UNKNOWN : Number(length);
}

/**
 * The request's line: what an operator reads, the same fields at every level. No headers and no body:
 * the path and the user agent are the only texts a client chooses, and each has its credentials censored.
 */
function requestFields(req: HttpRequest, res: ServerResponse, responseTime: number): Record<string, unknown> {
  const userAgent = req.headers['user-agent'];
  return {
    method: req.method,
    route: res.headersSent ? requestRoute(req as Request) : UNKNOWN,
    path: redactUrl(req.originalUrl ?? req.url ?? ''),
    status: res.writableFinished ? res.statusCode : UNKNOWN,
    responseTime,
    workspaceId: req.workspace?.id ?? UNKNOWN,
    remoteAddress: req.ip ?? req.socket.remoteAddress ?? UNKNOWN,
    userAgent: userAgent === undefined ? UNKNOWN : redactKeys(userAgent.slice(0, USER_AGENT_MAX)),
    bytes: bytesSent(res),
  };
}

const requestMessage = (req: HttpRequest, res: ServerResponse) =>
  `${req.method} ${res.headersSent ? requestRoute(req as Request) : '(no response)'} ${res.writableFinished ? res.statusCode : 'aborted by the client'}`;

/** pino-http's options: one JSON line per request once it ends, credentials censored wherever they appear. */
function loggerParams(config: AppConfig, destination?: DestinationStream): Params {
  const transport = destination ? undefined : prettyTransport(config);
  const options: Options<HttpRequest, ServerResponse> = {
    level: config.logLevel,
    timestamp: pino.stdTimeFunctions.isoTime,
    transport,
    // The level by name (pino-pretty prints it itself); any field named `secret` (a webhook's signing
    // secret) is never written.
    formatters: { ...(transport ? {} : { level: (label: string) => ({ level: label }) }), log: censorSecrets },
    genReqId: requestId,
    customLogLevel: levelWithin(config.logLevel),
    // Every line written during a request carries its id (`reqId`), and nothing else of the request: the
    // request's own line is built at its end from requestFields, so the request and response objects are
    // never serialized (pino-http binds `req` to a logger it then leaves unused: serialized to nothing).
    quietReqLogger: true,
    quietResLogger: true,
    wrapSerializers: false,
    serializers: { req: () => undefined, err: pino.stdSerializers.err },
    customSuccessObject: (req, res, line: { responseTime: number }) => requestFields(req, res, line.responseTime),
    customSuccessMessage: requestMessage,
    // The error pino-http makes up for a 5xx is only its status; the cause is logged by the exception filter.
    customErrorObject: (req, res, _error, line: { responseTime: number }) => requestFields(req, res, line.responseTime),
    customErrorMessage: requestMessage,
  };
  return { pinoHttp: (destination ? [options, destination] : options) as Params['pinoHttp'] };
}

/**
 * The process's logger (nestjs-pino): Nest's Logger writes through it, and it logs every request.
 * nestjs-pino keeps one root logger per process: the first app built in a process sets its level and
 * destination.
 */
@Module({
  imports: [
    LoggerModule.forRootAsync({
      providers: [{ provide: LOG_DESTINATION, useValue: undefined }],
      inject: [APP_CONFIG, LOG_DESTINATION],
      useFactory: (config: AppConfig, destination?: DestinationStream) => loggerParams(config, destination),
    }),
  ],
})
export class LoggingModule {}
