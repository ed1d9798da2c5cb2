import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module.js';
import { setupApp } from './app.setup.js';
import { runMigrations } from './core/database/migrate.js';
import { applyServerTimeouts } from './core/http/server-timeouts.js';
import { exitOnSignals } from './core/shutdown.js';
import { describeStartupFailure } from './core/startup-failure.js';
import type { AppConfig } from './core/config/config.js';
import { stopTracing } from './core/tracing/tracing.js';
import { describeDemoSeed, seedDemo } from './workspaces/demo-seed.js';

/** The API process (`dist/main.js` imports it once tracing, when on, has started). */
async function bootstrap(config: AppConfig): Promise<void> {
  const logger = new Logger('Main');
  const applied = config.migrationsRun ? await runMigrations(config) : [];
  // Logs are held until setupApp hands Nest the JSON logger.
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config), {
    bodyParser: false,
    bufferLogs: true,
    // A failure reaches the catch below, which names the variable to check.
    abortOnError: false,
  });
  setupApp(app);
  if (applied.length > 0) logger.log(`Applied migrations: ${applied.join(', ')}`);
  if (config.seedDemo) {
    for (const line of describeDemoSeed(await seedDemo(app, config), config.port)) logger.log(line);
  }
  exitOnSignals(app, config, logger);
  applyServerTimeouts(app.getHttpServer(), config);
  await app.listen(config.port);
  logger.log(`API listening on http://localhost:${config.port}/api/v1 (worker ${config.workerEnabled ? 'on' : 'off'})`);
  logger.log(`API reference: http://localhost:${config.port}/api/v1/docs`);
}

export function startApi(config: AppConfig): void {
  bootstrap(config).catch(async (error: Error) => {
    process.stderr.write(`Failed to start: ${describeStartupFailure(error, config)}\n`);
    await stopTracing();
    process.exit(1);
  });
}
