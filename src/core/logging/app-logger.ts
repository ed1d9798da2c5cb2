import type { LoggerService } from '@nestjs/common';
import type { Level, Logger } from 'pino';

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !(value instanceof Error) && !Array.isArray(value);

/**
 * Nest's Logger API over pino, so `new Logger('Context').log(...)` anywhere writes one JSON line.
 * Nest appends the context as the last parameter; an object message becomes the line's fields.
 */
export class AppLogger implements LoggerService {
  constructor(readonly pino: Logger) {}

  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }

  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }

  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }

  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }

  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }

  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  private write(level: Level, message: unknown, params: unknown[]): void {
    if (!this.pino.isLevelEnabled(level)) return;
    const context = params.length > 0 && typeof params.at(-1) === 'string' ? (params.pop() as string) : undefined;
    // Nest's error(message, stack, context): the stack is the first remaining parameter.
    const stack = level === 'error' || level === 'fatal' ? params.find((p) => typeof p === 'string') : undefined;
    const fields: Record<string, unknown> = { context, ...(stack ? { stack } : {}) };
    if (message instanceof Error) {
      this.pino[level]({ ...fields, err: message }, message.message);
    } else if (isPlainObject(message)) {
      this.pino[level]({ ...fields, ...message });
    } else {
      this.pino[level](fields, String(message));
    }
  }
}
