import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { createHash, timingSafeEqual } from 'node:crypto';
import { ApiError } from '../core/http/api-error.js';

// Hashing first gives equal-length inputs, so the comparison takes the same time whatever was sent.
const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
const same = (a: string, b: string) => timingSafeEqual(digest(a), digest(b));

function presented(req: Request): { user: string; password: string } | undefined {
  const [scheme, encoded] = (req.headers.authorization ?? '').split(' ');
  if (scheme?.toLowerCase() !== 'basic' || !encoded) return undefined;
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** HTTP basic auth against one fixed user; 401 with a challenge otherwise. */
export function basicAuth(expected: { user: string; password: string }, realm: string): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) => {
    const given = presented(req);
    // Both comparisons always run, so timing does not tell a right user name from a wrong one.
    const userOk = same(given?.user ?? '', expected.user);
    const passwordOk = same(given?.password ?? '', expected.password);
    if (given && userOk && passwordOk) return next();
    next(
      new ApiError(401, 'not_authenticated', 'Valid dashboard credentials required', undefined, {
        'WWW-Authenticate': `Basic realm="${realm}", charset="UTF-8"`,
      }),
    );
  };
}
