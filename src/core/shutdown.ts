import type { INestApplicationContext } from '@nestjs/common';

/**
 * SIGTERM/SIGINT: close the app (the worker stops taking jobs and finishes attempts in flight,
 * then connections close) and exit 0. A second signal exits at once.
 */
export function exitOnSignals(app: INestApplicationContext, log: (message: string) => void): void {
  let closing = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (closing) process.exit(1);
    closing = true;
    log(`${signal} received, shutting down`);
    app.close().then(
      () => process.exit(0),
      (error: Error) => {
        log(`Shutdown failed: ${error.message}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
