import { createRequire } from 'node:module';
import type { LoggerOptions } from 'pino';
import type { AppConfig } from '../config/config.js';

/** pino-pretty is a dev dependency: only a development run that has it installed uses it. */
export function prettyTransport(config: AppConfig): LoggerOptions['transport'] {
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
