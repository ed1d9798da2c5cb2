import { Global, Module } from '@nestjs/common';
import type { DestinationStream } from 'pino';
import type { AppConfig } from '../config/config.js';
import { APP_CONFIG } from '../config/config.module.js';
import { AppLogger } from './app-logger.js';
import { createPinoLogger } from './pino-logger.js';

/** Where log lines go; undefined = stdout. Tests override it to read the lines. */
export const LOG_DESTINATION = Symbol('LOG_DESTINATION');

/** The process's logger; entrypoints pass it to `app.useLogger` so Nest's Logger writes through it. */
@Global()
@Module({
  providers: [
    { provide: LOG_DESTINATION, useValue: undefined },
    {
      provide: AppLogger,
      inject: [APP_CONFIG, LOG_DESTINATION],
      useFactory: (config: AppConfig, destination?: DestinationStream) =>
        new AppLogger(createPinoLogger(config, destination)),
    },
  ],
  exports: [AppLogger],
})
export class LoggingModule {}
