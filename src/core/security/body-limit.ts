import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { Socket } from 'node:net';
import { ApiError } from '../http/api-error.js';
import { fullPath } from '../http/allowed-methods.js';

export interface BodyLimits {
  /** Every JSON body but submissions. */
  defaultBytes: number;
  /** POST /calculators/{id}/submissions. */
  submissionBytes: number;
}

const SUBMISSIONS_PATH = /^\/api\/v1\/calculators\/[^/]+\/submissions(\/|$)/i;

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

/**
 * express.json with the body limits enforced as the bytes arrive. body-parser alone reads (and
 * discards) the whole of an oversize body before it answers 413, so a client announcing 50 MiB
 * would have to send all of it first, and an endless chunked body would never be answered.
 */
export function jsonBody(limits: BodyLimits): RequestHandler {
  const parsers = new Map(
    [limits.defaultBytes, limits.submissionBytes].map((limit) => [limit, express.json({ limit })]),
  );
  return (req: Request, res: Response, next: NextFunction) => {
    const limit = SUBMISSIONS_PATH.test(fullPath(req)) ? limits.submissionBytes : limits.defaultBytes;
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > limit) return next(tooLarge(limit, req.socket));
    let settled = false;
    const done = (error?: unknown) => {
      if (settled) return; // body-parser answers once the connection has closed; the 413 went out before
      settled = true;
      if (!error && nestedDeeperThan(req.body, MAX_JSON_DEPTH)) {
        return next(ApiError.badRequest(`Request body is nested more than ${MAX_JSON_DEPTH} levels deep`));
      }
      next(error);
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
    parsers.get(limit)!(req, res, done);
  };
}
