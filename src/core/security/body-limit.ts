import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { isUtf8 } from 'node:buffer';
import type { Socket } from 'node:net';
import { ApiError } from '../http/api-error.js';

/** Arrays and objects inside one another; deeper bodies would overflow the stack of recursive validators. */
export const MAX_JSON_DEPTH = 100;

function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (depth > max) return true;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return false;
}

/** How long the rest of an oversize body is read and discarded after the 413, before the socket closes. */
export const LINGER_MS = 2_000;

/**
 * The 413, with Connection: close so no client reuses the connection. Node would end it with
 * destroySoon(), and closing a socket with unread input resets it: the peer, still sending, loses
 * the 413 it has not read yet. So the socket half-closes instead and drains for a bounded time.
 */
function tooLarge(limit: number, socket: Socket): ApiError {
  socket.destroySoon = () => {
    socket.end();
    const timer = setTimeout(() => socket.destroy(), LINGER_MS).unref();
    socket.once('close', () => clearTimeout(timer));
  };
  return new ApiError(413, 'payload_too_large', `Request body exceeds the limit of ${limit} bytes`, undefined, {
    Connection: 'close',
  });
}

const PARSE_ERRORS: Record<string, (cause: { limit?: number }) => ApiError> = {
  'entity.parse.failed': () => ApiError.badRequest('Malformed JSON in request body'),
  'entity.too.large': (cause) =>
    new ApiError(413, 'payload_too_large', `Request body exceeds the limit of ${cause.limit} bytes`),
  'encoding.unsupported': () => ApiError.badRequest('Unsupported content encoding'),
  'charset.unsupported': () => ApiError.badRequest('Unsupported charset; send UTF-8 JSON'),
  'request.aborted': () => ApiError.badRequest('Request aborted'),
  'request.size.invalid': () => ApiError.badRequest('Request size did not match Content-Length'),
};

/** The top-level field whose value (or a key or string inside it) `bad` holds. */
export function fieldHolding(value: unknown, bad: (text: string) => boolean, path = ''): string | null {
  if (typeof value === 'string') return bad(value) ? path || 'body' : null;
  if (typeof value !== 'object' || value === null) return null;
  for (const [key, child] of Object.entries(value)) {
    const field = path || key; // the body's own field: the API names no deeper path
    if (bad(key)) return field;
    const found = fieldHolding(child, bad, field);
    if (found) return found;
  }
  return null;
}

// JSON.parse decodes lone surrogates from \u escapes; Postgres text cannot hold NUL.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const notPlainText = (text: string) => text.includes('\u0000') || LONE_SURROGATE.test(text);

/** A body whose bytes are not UTF-8: the field whose string held them (decoded as U+FFFD), else `body`. */
function notUtf8(raw: Buffer): ApiError {
  let field = 'body';
  try {
    field = fieldHolding(JSON.parse(raw.toString('utf8')), (text) => text.includes('\ufffd')) ?? 'body';
  } catch {
    // not JSON either: the body as a whole
  }
  return ApiError.invalidField(field, 'must be valid UTF-8');
}

const asApiError = (error: unknown): unknown => {
  // Thrown by the UTF-8 check inside body-parser, which sets its status to 403; the streaming 413 passes as it is.
  if (error instanceof ApiError && error.code === 'payload_too_large') return error;
  if (error instanceof ApiError) return new ApiError(400, error.code, error.message, error.details);
  const cause = error as { type?: string; limit?: number };
  const mapped = typeof cause?.type === 'string' ? PARSE_ERRORS[cause.type] : undefined;
  if (mapped) return mapped(cause);
  // Any other refusal of body-parser (a 4xx it means the client to see, e.g. a broken gzip stream).
  const { status, expose, message } = error as { status?: number; expose?: boolean; message?: string };
  return expose && status === 400 ? ApiError.badRequest(message ?? 'Malformed request body') : error;
};

const parsers = new Map<number, RequestHandler>();

/**
 * express.json with the body limit enforced as the bytes arrive. body-parser alone reads (and
 * discards) the whole of an oversize body before it answers 413, so a client announcing 50 MiB
 * would have to send all of it first, and an endless chunked body would never be answered.
 */
export function readJsonBody(req: Request, res: Response, limit: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > limit) return reject(tooLarge(limit, req.socket));
    let settled = false;
    const done = (error?: unknown) => {
      if (settled) return; // body-parser answers once the connection has closed; the 413 went out before
      settled = true;
      if (error) return reject(asApiError(error));
      if (nestedDeeperThan(req.body, MAX_JSON_DEPTH)) {
        return reject(ApiError.badRequest(`Request body is nested more than ${MAX_JSON_DEPTH} levels deep`));
      }
      const field = fieldHolding(req.body, notPlainText);
      if (field) return reject(ApiError.invalidField(field, 'must not contain a lone surrogate or NUL character'));
      resolve();
    };
    if (declared === undefined && req.headers['transfer-encoding'] !== undefined) {
      let received = 0;
      const count = (chunk: Buffer) => {
        received += chunk.length;
        if (received <= limit) return;
        req.off('data', count);
        done(tooLarge(limit, req.socket));
      };
      // Attached in the same tick as body-parser's own listener, so both see every chunk.
      req.on('data', count);
      req.once('end', () => req.off('data', count));
    }
    let parse = parsers.get(limit);
    if (!parse) {
      const verify = (_req: unknown, _res: unknown, raw: Buffer) => {
        if (!isUtf8(raw)) throw notUtf8(raw);
      };
      parsers.set(limit, (parse = express.json({ limit, verify })));
    }
    parse(req, res, done as NextFunction);
  });
}
