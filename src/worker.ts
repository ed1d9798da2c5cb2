import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { loadConfigOrExit } from './core/config/load-or-exit.js';
import { AppLogger } from './core/logging/app-logger.js';
import { exitOnSignals } from './core/shutdown.js';
import { WorkerModule } from './worker.module.js';

/** Delivery worker only (`npm run start:worker`); run several to scale. Migrations are the api's job. */
async function bootstrap(): Promise<void> {
  const config = loadConfigOrExit();
  const logger = new Logger('Worker');
  const app = await NestFactory.createApplicationContext(WorkerModule.forRoot(config), { bufferLogs: true });
  app.useLogger(app.get(AppLogger));
  exitOnSignals(app, config, logger);
  logger.log(`Worker running (concurrency ${config.workerConcurrency}, queue prefix ${config.queuePrefix})`);
}

bootstrap().catch((error: Error) => {
  process.stderr.write(`Worker failed to start: ${error.message}\n`);
  process.exit(1);
});
