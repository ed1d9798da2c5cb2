const CONNECTION_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);
// Postgres SQLSTATEs: 53300 too many connections, 57P01 admin shutdown, 57P03 cannot connect now
// (starting up or shutting down), 57014 statement_timeout, 55P03 lock_timeout; class 08 is every
// connection exception.
const UNAVAILABLE_SQLSTATES = new Set(['53300', '57P01', '57P03', '57014', '55P03']);
const CONNECTION_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error',
  'Connection closed',
];

/** True for errors that mean "Postgres cannot be reached right now" rather than a bug. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: string }).code ?? (error as { driverError?: { code?: string } }).driverError?.code;
  if (code && (CONNECTION_ERROR_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code) || code.startsWith('08'))) {
    return true;
  }
  return CONNECTION_MESSAGES.some((m) => error.message.includes(m));
}
