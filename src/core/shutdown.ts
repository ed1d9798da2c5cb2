import type { INestApplicationContext, LoggerService } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import type { AppConfig } from './config/config.js';
import { stopTracing } from './tracing/tracing.js';

// After the attempts in flight, each bounded by DELIVERY_TIMEOUT_MS: recording them, closing connections.
export const SHUTDOWN_MARGIN_MS = 5_000;

/** How long SIGTERM may take before the process gives up on what is left and exits with 1. */
export const shutdownDeadlineMs = (config: AppConfig): number => config.deliveryTimeoutMs + SHUTDOWN_MARGIN_MS;

const SHUTDOWN_HOOKS = ['onModuleDestroy', 'beforeApplicationShutdown', 'onApplicationShutdown'] as const;

/**
 * Wraps every provider's shutdown hooks so that a deadline can name the ones still running. Nest
 * runs them in order and waits for each, so one that hangs (a close waiting on an unreachable
 * Redis or Postgres) would otherwise hold the process silently.
 */
function trackShutdownHooks(app: INestApplicationContext): Set<string> {
  const running = new Set<string>();
  const wrapped = new WeakSet<object>();
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.providers.values()) {
      const instance = wrapper.instance as Record<string, unknown> | null | undefined;
      if (typeof instance !== 'object' || instance === null || wrapped.has(instance)) continue;
      wrapped.add(instance);
      for (const hook of SHUTDOWN_HOOKS) {
        const original = instance[hook];
        if (typeof original !== 'function') continue;
        const name = `${String(wrapper.name)}.${hook}`;
        instance[hook] = async (...args: unknown[]) => {
          running.add(name);
          try {
            return await original.apply(instance, args);
          } finally {
            running.delete(name);
          }
        };
      }
    }
  }
  return running;
}

/**
 * SIGTERM/SIGINT: close the app (the worker stops taking jobs and finishes attempts in flight,
 * then connections close) and exit 0. Past the deadline, or on a second signal, exit 1 at once,
 * naming what was still closing: a job left running is attempted again once its lock expires.
 */
export function exitOnSignals(app: INestApplicationContext, config: AppConfig, logger: LoggerService): void {
  const deadlineMs = shutdownDeadlineMs(config);
  let running: Set<string> | undefined;
  const abandoned = () =>
    running && running.size > 0 ? [...running].join(', ') : 'no shutdown hook (HTTP requests in flight)';
  const onSignal = (signal: NodeJS.Signals) => {
    if (running) {
      logger.error(`${signal} received again, exiting now; abandoned: ${abandoned()}`);
      process.exit(1);
    }
    running = trackShutdownHooks(app);
    logger.log(`${signal} received, shutting down (at most ${deadlineMs} ms)`);
    setTimeout(() => {
      logger.error(`Shutdown unfinished after ${deadlineMs} ms, exiting with 1; abandoned: ${abandoned()}`);
      process.exit(1);
    }, deadlineMs);
    // The spans of the last attempts are exported before the exit (bounded; nothing to do when tracing is off).
    app.close().then(
      () => stopTracing().then(() => process.exit(0)),
      (error: Error) => {
        logger.error(`Shutdown failed: ${error.message}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
