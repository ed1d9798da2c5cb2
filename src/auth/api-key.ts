import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export const API_KEY_HEADER = 'x-ac-api-key';
const KEY_PATTERN = /^ack_[a-z0-9]{8}_[A-Za-z0-9_-]{43}$/;

export const hashApiKey = (key: string): string => createHash('sha256').update(key).digest('hex');

/** `ack_` + 8 readable characters (the prefix shown in listings) + `_` + 32 random bytes. */
export function generateApiKey(): { key: string; prefix: string; hash: string } {
  const readable = randomBytes(8).toString('hex').slice(0, 8);
  const prefix = `ack_${readable}`;
  const key = `${prefix}_${randomBytes(32).toString('base64url')}`;
  return { key, prefix, hash: hashApiKey(key) };
}

export const prefixOf = (key: string): string => key.slice(0, 12);

export const looksLikeApiKey = (value: string): boolean => KEY_PATTERN.test(value);

// On the request itself: a WeakMap entry per request is an ephemeron every garbage collection must visit.
const PRESENTED_HASH = Symbol('presentedKeyHash');
type HashedRequest = IncomingMessage & { [PRESENTED_HASH]?: string | null };

/** SHA-256 of the request's well-formed API key (null without one), hashed once per request. */
export function presentedKeyHash(req: HashedRequest): string | null {
  let hash = req[PRESENTED_HASH];
  if (hash === undefined) {
    const presented = req.headers[API_KEY_HEADER];
    hash = typeof presented === 'string' && looksLikeApiKey(presented) ? hashApiKey(presented) : null;
    req[PRESENTED_HASH] = hash;
  }
  return hash;
}
