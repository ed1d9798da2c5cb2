import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';

export interface SignatureHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

// createHmac turns a Buffer key into a key object on every call, which costs more than the HMAC of a
// typical body, so each secret's key object is kept. Secrets are few per worker; the bound only stops
// a worker with very many webhooks from growing without end.
const MAX_KEYS = 10_000;
const keys = new Map<string, KeyObject>();

function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (key) return key;
  key = createSecretKey(Buffer.from(secret.replace(/^whsec_/, ''), 'base64'));
  if (keys.size >= MAX_KEYS) keys.delete(keys.keys().next().value!);
  keys.set(secret, key);
  return key;
}

/**
 * Standard Webhooks: `v1,` + base64 HMAC-SHA256 over `id.timestamp.body`, keyed by the secret's bytes;
 * one space-separated entry per secret (the current one first, then a rotated-out one during its overlap).
 */
export function signPayload(
  secrets: string[],
  messageId: string,
  timestampSeconds: number,
  body: string,
): SignatureHeaders {
  const signed = `${messageId}.${timestampSeconds}.${body}`;
  const sign = (secret: string) => `v1,${createHmac('sha256', keyOf(secret)).update(signed).digest('base64')}`;
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map(sign).join(' '),
  };
}
