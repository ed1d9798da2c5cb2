import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { AppConfig } from '../config/config.js';
import { APP_CONFIG } from '../config/config.module.js';
import { dataSourceOptions } from './data-source.js';

@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        // The app's connections, unlike the migrations', get the statement and lock timeouts.
        ...dataSourceOptions(config, config.databasePoolSize, config.databaseTimeouts),
        // The entities are those the features register with TypeOrmModule.forFeature.
        autoLoadEntities: true,
        // The app never blocks start-up retrying: a down database is reported and the process exits.
        retryAttempts: 0,
      }),
    }),
  ],
})
export class DatabaseModule {}
