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

// How deep a `secret` field is looked for: a logged object's own, and two levels of what it holds.
const SECRET_DEPTH = 2;

/**
 * `fields` with every field named `secret` (a webhook's signing secret) replaced, at the top and up to two
 * levels down. Only the objects on a secret's path are copied: a line of plain fields (each request's)
 * costs a look at its keys, where pino's redaction copied and restored every object it passed.
 */
export function censorSecrets<T extends object>(fields: T, depth = SECRET_DEPTH): T {
  let copy: Record<string, unknown> | unknown[] | undefined;
  for (const key in fields) {
    if (!Object.hasOwn(fields, key)) continue;
    const value: unknown = fields[key];
    const censored =
      key === 'secret'
        ? REDACTED
        : depth > 0 && typeof value === 'object' && value !== null
          ? censorSecrets(value, depth - 1)
          : value;
    if (censored === value) continue;
    copy ??= Array.isArray(fields) ? [...(fields as unknown[])] : { ...(fields as Record<string, unknown>) };
    (copy as Record<string, unknown>)[key] = censored;
  }
  return (copy as T | undefined) ?? fields;
}
