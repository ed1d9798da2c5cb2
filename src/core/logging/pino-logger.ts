import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import type { AppConfig } from '../config/config.js';

/** Never written to a log: credentials in request headers, and any field named `secret`. */
const REDACTED_PATHS = [
  'req.headers["x-ac-api-key"]',
  'req.headers.authorization',
  'req.headers["proxy-authorization"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'secret',
  '*.secret',
  '*.*.secret',
];

/** pino-pretty is a dev dependency: only a development run that has it installed uses it. */
function prettyTransport(config: AppConfig): LoggerOptions['transport'] {
  if (config.env !== 'development') return undefined;
  try {
    createRequire(import.meta.url).resolve('pino-pretty');
  } catch {
    return undefined;
  }
  return {
    target: 'pino-pretty',
    options: {
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname,context',
      messageFormat: '{if context}[{context}] {end}{msg}',
    },
  };
}

/** The process's one root logger: JSON lines on stdout (or `destination`, in tests), pretty in development. */
export function createPinoLogger(config: AppConfig, destination?: DestinationStream): Logger {
  const options: LoggerOptions = {
    level: config.logLevel,
    redact: { paths: REDACTED_PATHS, censor: '[Redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  const transport = destination ? undefined : prettyTransport(config);
  if (transport) return pino({ ...options, transport });
  return pino({ ...options, formatters: { level: (label) => ({ level: label }) } }, destination);
}
