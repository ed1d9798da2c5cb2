export const REDACTED = '[Redacted]';

// A header or query parameter whose name says it may carry a credential loses its whole value.
const SENSITIVE_NAME = /key|token|secret|auth|cookie|passw|session/i;
// An API key (`ack_...`), signing secret (`whsec_...`), portal link token (`acpl_...`) or portal session
// (`acps_...`) anywhere else: in a path, a value, a name.
const KEY_SHAPED = /(?:ack|whsec|acpl|acps)_[\w+/=-]*/gi;

type Values = Record<string, unknown>;

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

const redactValue = (value: unknown): unknown =>
  typeof value === 'string' ? redactKeys(value) : Array.isArray(value) ? value.map(redactValue) : value;

/** Headers, query or route parameters: credential-named entries censored, key-shaped text in the rest. */
export function redactValues(values: unknown): unknown {
  if (typeof values !== 'object' || values === null) return values;
  return Object.fromEntries(
    Object.entries(values as Values).map(([name, value]) => [
      redactKeys(name),
      SENSITIVE_NAME.test(name) ? REDACTED : redactValue(value),
    ]),
  );
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

interface SerializedMessage {
  url?: string;
  headers?: unknown;
  query?: unknown;
}

/** pino-http's request (and response) serializer output with every credential censored. */
export function redactMessage<T extends SerializedMessage>(message: T): T {
  return {
    ...message,
    ...(message.url === undefined ? {} : { url: redactUrl(message.url) }),
    ...(message.headers === undefined ? {} : { headers: redactValues(message.headers) }),
    ...(message.query === undefined ? {} : { query: redactValues(message.query) }),
  };
}
