import { createHash, randomBytes } from 'node:crypto';

/** The header a portal session's credential travels in (the console's API calls), never a URL. */
export const PORTAL_SESSION_HEADER = 'x-ac-portal-session';

// Readable prefixes, so the log redaction recognizes either anywhere (core/logging/log-redaction.ts).
const LINK_PREFIX = 'acpl_';
const SESSION_PREFIX = 'acps_';
const LINK_PATTERN = /^acpl_[A-Za-z0-9_-]{43}$/;
const SESSION_PATTERN = /^acps_[A-Za-z0-9_-]{43}$/;

export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

const newToken = (prefix: string): { token: string; hash: string } => {
  const token = `${prefix}${randomBytes(32).toString('base64url')}`;
  return { token, hash: hashToken(token) };
};

/** The link's token (32 random bytes): shown once, in the URL's fragment; only its hash is stored. */
export const newLinkToken = () => newToken(LINK_PREFIX);

/** The session credential a link is exchanged for (32 random bytes); only its hash is stored. */
export const newSessionToken = () => newToken(SESSION_PREFIX);

export const looksLikeLinkToken = (value: string): boolean => LINK_PATTERN.test(value);
export const looksLikeSessionToken = (value: string): boolean => SESSION_PATTERN.test(value);

/** What precedes the token in a link's URL fragment: `/console/#portal=<token>`. */
export const PORTAL_FRAGMENT = 'portal=';
