import { createHash } from 'node:crypto';
import { stringify } from 'safe-stable-stringify';
import { ApiError } from '../core/http/api-error.js';

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'idempotent-replayed';
const KEY_FORMAT = /^[\x20-\x7e]{1,255}$/;

/** What a repeat must match to be answered with the kept answer. */
export interface IdempotentRequest {
  workspaceId: string;
  key: string;
  method: string;
  path: string;
  bodyHash: string;
}

/** The header's value, or null when the request carries none; a malformed one is a 400 naming the header. */
export function idempotencyKeyOf(header: string | string[] | undefined): string | null {
  if (header === undefined) return null;
  if (typeof header !== 'string' || !KEY_FORMAT.test(header)) {
    throw ApiError.invalidField('Idempotency-Key', 'must be 1 to 255 printable ASCII characters');
  }
  return header;
}

/**
 * SHA-256 of the parsed JSON body with its keys sorted: what the handler acts on, so a client that
 * re-serializes the same body (other key order or spacing) gets the kept answer, not a false 400.
 */
export function bodyHash(body: unknown): string {
  return createHash('sha256')
    .update(body === undefined ? '' : stringify(body))
    .digest('hex');
}

export const sameRequest = (a: IdempotentRequest, b: IdempotentRequest): boolean =>
  a.method === b.method && a.path === b.path && a.bodyHash === b.bodyHash;
