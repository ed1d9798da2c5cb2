import { DynamicModule, Module } from '@nestjs/common';
import { AuthModule } from './auth/auth.module.js';
import { CalculatorsModule } from './calculators/calculators.module.js';
import type { AppConfig } from './core/config/config.js';
import { ConfigModule } from './core/config/config.module.js';
import { DatabaseModule } from './core/database/database.module.js';
import { LoggingModule } from './core/logging/logging.module.js';
import { RateLimitModule } from './core/security/rate-limit.module.js';
import { DeliveryWorkerModule } from './delivery/delivery-worker.module.js';
import { DeliveryModule } from './delivery/delivery.module.js';
import { HealthModule } from './health/health.module.js';
import { MetricsApiModule } from './metrics/metrics-api.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { SubmissionsModule } from './submissions/submissions.module.js';
import { WebhooksModule } from './webhooks/webhooks.module.js';
import { WorkspacesModule } from './workspaces/workspaces.module.js';

/** Shared core every process needs: configuration and the database. */
export const coreImports = (config: AppConfig) => [ConfigModule.forRoot(config), DatabaseModule];

/** The API process: the HTTP API and, unless WORKER_ENABLED=false, the delivery worker in-process. */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ...coreImports(config),
        LoggingModule,
        MetricsModule,
        RateLimitModule,
        AuthModule,
        WorkspacesModule,
        CalculatorsModule,
        WebhooksModule,
        SubmissionsModule,
        DeliveryModule,
        HealthModule,
        MetricsApiModule,
        ...(config.workerEnabled ? [DeliveryWorkerModule] : []),
      ],
    };
  }
}
