import type { AppConfig } from './config/config.js';

const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

interface SystemError extends Error {
  code?: string;
  port?: number;
  severity?: string;
}

const endpoint = (url: string, defaultPort: number) => {
  const { hostname, port } = new URL(url);
  return { host: hostname, port: Number(port || defaultPort) };
};

/**
 * The line an operator reads when a process cannot start: which service could not be reached and
 * which variable to check, instead of a bare `connect ECONNREFUSED`.
 */
export function describeStartupFailure(error: Error, config: AppConfig): string {
  const { code, port, severity } = error as SystemError;
  const postgres = endpoint(config.databaseUrl, 5432);
  const redis = endpoint(config.redisUrl, 6379);
  // Postgres answered with an error (a missing database, a refused login): a SQLSTATE and a severity.
  const fromPostgres = severity !== undefined || error.message.includes('the database system');
  if (fromPostgres) {
    return `Postgres at ${postgres.host}:${postgres.port} refused the connection (check DATABASE_URL): ${error.message}`;
  }
  if (code && UNREACHABLE.has(code)) {
    if (port === redis.port && port !== postgres.port) {
      return `Cannot reach Redis at ${redis.host}:${redis.port} (check REDIS_URL): ${error.message}`;
    }
    return `Cannot reach Postgres at ${postgres.host}:${postgres.port} (check DATABASE_URL): ${error.message}`;
  }
  return error.message;
}
