import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
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

const asApiError = (error: unknown): unknown => {
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
    if (!parse) parsers.set(limit, (parse = express.json({ limit })));
    parse(req, res, done as NextFunction);
  });
}
