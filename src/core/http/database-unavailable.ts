const CONNECTION_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);
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
  if (code && (CONNECTION_ERROR_CODES.has(code) || code.startsWith('08') || code === '57P01' || code === '57P03')) {
    return true;
  }
  return CONNECTION_MESSAGES.some((m) => error.message.includes(m));
}
