import { createHmac } from 'node:crypto';

export interface SignatureHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
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
  const sign = (secret: string) => {
    const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
    return `v1,${createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64')}`;
  };
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map(sign).join(' '),
  };
}
