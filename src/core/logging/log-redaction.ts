export const REDACTED = '[Redacted]';

// A query parameter whose name says it may carry a credential loses its whole value.
const SENSITIVE_NAME = /key|token|secret|auth|cookie|passw|session/i;
// An API key (`ack_...`), signing secret (`whsec_...`), portal link token (`acpl_...`) or portal session
// (`acps_...`) anywhere else: in a path, a value, a name.
const KEY_SHAPED = /(?:ack|whsec|acpl|acps)_[\w+/=-]*/gi;

const hasKeyShape = (text: string): boolean => text.search(KEY_SHAPED) !== -1;

function decoded(text: string): string {
  if (!text.includes('%')) return text;
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** `text` with every key-shaped string replaced, looking through percent-encoding too. */
export function redactKeys(text: string): string {
  if (hasKeyShape(text)) return text.replace(KEY_SHAPED, REDACTED);
  const plain = decoded(text);
  return plain !== text && hasKeyShape(plain) ? plain.replace(KEY_SHAPED, REDACTED) : text;
}

/** A request URL fit for a log: the path's key-shaped text and the query's credentials censored. */
export function redactUrl(url: string): string {
  const queryAt = url.indexOf('?');
  if (queryAt === -1) return redactKeys(url);
  const query = url
    .slice(queryAt + 1)
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      const name = equals === -1 ? pair : pair.slice(0, equals);
      if (equals !== -1 && SENSITIVE_NAME.test(decoded(name))) return `${redactKeys(name)}=${REDACTED}`;
      return redactKeys(pair);
    });
  return `${redactKeys(url.slice(0, queryAt))}?${query.join('&')}`;
}
