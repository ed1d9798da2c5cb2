/** Custom request headers of a webhook (DESIGN 10): what may be set, and how a value is shown. */

export const MAX_CUSTOM_HEADERS = 10;
export const MAX_HEADER_NAME_LENGTH = 256;
export const MAX_HEADER_VALUE_LENGTH = 4096;

// RFC 9110 token.
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// Printable ASCII and inner spaces or tabs: what every client sends unchanged, no line break.
const HEADER_VALUE = /^[\x21-\x7e](?:[\x20-\x7e\t]*[\x21-\x7e])?$/;

/** Ours to set (content, product, Standard Webhooks signing) or the connection's (hop-by-hop, framing). */
const RESERVED = new Set([
  'content-type',
  'content-length',
  'content-encoding',
  'user-agent',
  'host',
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'expect',
]);

const isReserved = (name: string): boolean => RESERVED.has(name) || name.startsWith('webhook-');

/** Why this header may not be set, or null when it may; a value is never repeated in the answer. */
export function headerProblem(name: string, value: unknown): string | null {
  if (name.length > MAX_HEADER_NAME_LENGTH || !HEADER_NAME.test(name)) {
    return `header name ${JSON.stringify(name.slice(0, 64))} is not a valid HTTP header name`;
  }
  if (isReserved(name.toLowerCase())) {
    return `header ${name} is set by the service (content-type, user-agent, webhook-* and connection headers cannot be changed)`;
  }
  if (value === null) return null;
  if (typeof value !== 'string') return `header ${name} must have a string value, or null to remove it`;
  if (value.length > MAX_HEADER_VALUE_LENGTH) {
    return `header ${name} has a value longer than ${MAX_HEADER_VALUE_LENGTH} characters`;
  }
  if (!HEADER_VALUE.test(value)) {
    return `header ${name} must have a non-empty value of printable ASCII, without leading or trailing spaces`;
  }
  return null;
}

// A long value keeps its first 4 characters (which one is set), with at least 12 hidden; a short one none.
const SHOWN_PREFIX = 4;
const MIN_LENGTH_SHOWN = 16;

/** How a header value appears in answers: never in full. */
export const maskHeaderValue = (value: string): string =>
  value.length >= MIN_LENGTH_SHOWN ? `${value.slice(0, SHOWN_PREFIX)}…` : '••••';

/**
 * The headers after a merge patch (RFC 7396): a string sets the header, null removes it, the others stay.
 * Names are case-insensitive: each is kept in lower case.
 */
export function mergeHeaders(
  current: Record<string, string>,
  patch: Record<string, string | null> | null,
): Record<string, string> {
  if (patch === null) return {};
  // A Map, then own properties: a header named `__proto__` is data, not the object's prototype.
  const merged = new Map(Object.entries(current));
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) merged.delete(name.toLowerCase());
    else merged.set(name.toLowerCase(), value);
  }
  return Object.fromEntries(merged);
}
