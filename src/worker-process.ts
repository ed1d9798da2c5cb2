import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Logger as PinoLogger } from 'nestjs-pino';
import type { AppConfig } from './core/config/config.js';
import { exitOnSignals } from './core/shutdown.js';
import { describeStartupFailure } from './core/startup-failure.js';
import { stopTracing } from './core/tracing/tracing.js';
import { WorkerModule } from './worker.module.js';

/** Delivery worker only (`npm run start:worker`); run several to scale. Migrations are the api's job. */
async function bootstrap(config: AppConfig): Promise<void> {
  const logger = new Logger('Worker');
  const app = await NestFactory.createApplicationContext(WorkerModule.forRoot(config), {
    bufferLogs: true,
    // A failure reaches the catch below, which names the variable to check.
    abortOnError: false,
  });
  app.useLogger(app.get(PinoLogger));
  exitOnSignals(app, config, logger);
  logger.log(`Worker running (concurrency ${config.workerConcurrency}, queue prefix ${config.queuePrefix})`);
}

export function startWorker(config: AppConfig): void {
  bootstrap(config).catch(async (error: Error) => {
    process.stderr.write(`Worker failed to start: ${describeStartupFailure(error, config)}\n`);
    await stopTracing();
    process.exit(1);
  });
}
