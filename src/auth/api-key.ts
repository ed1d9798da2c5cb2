import { createHash, randomBytes } from 'node:crypto';

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
