import { DynamicModule, MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { RouterModule } from '@nestjs/core';
import { AuthModule } from './auth/auth.module.js';
import { CalculatorsController } from './calculators/calculators.controller.js';
import { CalculatorsModule } from './calculators/calculators.module.js';
import type { AppConfig } from './core/config/config.js';
import { ConfigModule } from './core/config/config.module.js';
import { DatabaseModule } from './core/database/database.module.js';
import { API_PREFIX } from './core/http/configure-app.js';
import { HttpPipelineModule } from './core/http/http.module.js';
import { AppLogger } from './core/logging/app-logger.js';
import { LoggingModule } from './core/logging/logging.module.js';
import { requestLogger } from './core/logging/request-logger.js';
import { RateLimitModule } from './core/security/rate-limit.module.js';
import { RateLimiter } from './core/security/rate-limiter.js';
import { apiSecurityHeaders } from './core/security/security-headers.js';
import { DeliveriesController } from './delivery/deliveries.controller.js';
import { DeliveryWorkerModule } from './delivery/delivery-worker.module.js';
import { DeliveryModule } from './delivery/delivery.module.js';
import { HealthModule } from './health/health.module.js';
import { HttpMetrics } from './metrics/http.metrics.js';
import { MetricsApiModule } from './metrics/metrics-api.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { API_MODULES } from './openapi/openapi.js';
import { SubmissionsController } from './submissions/submissions.controller.js';
import { SubmissionsModule } from './submissions/submissions.module.js';
import { WebhooksController } from './webhooks/webhooks.controller.js';
import { WebhooksModule } from './webhooks/webhooks.module.js';
import { WorkspacesController } from './workspaces/workspaces.controller.js';
import { WorkspacesModule } from './workspaces/workspaces.module.js';

/** Shared core every process needs: configuration and the database. */
export const coreImports = (config: AppConfig) => [ConfigModule.forRoot(config), DatabaseModule];

const API_CONTROLLERS = [
  WebhooksController,
  CalculatorsController,
  WorkspacesController,
  SubmissionsController,
  DeliveriesController,
];

/** The API process: the HTTP API and, unless WORKER_ENABLED=false, the delivery worker in-process. */
@Module({})
export class AppModule implements NestModule {
  constructor(
    private readonly logger: AppLogger,
    private readonly metrics: HttpMetrics,
    private readonly rateLimiter: RateLimiter,
  ) {}

  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ...coreImports(config),
        LoggingModule,
        HttpPipelineModule,
        MetricsModule,
        RateLimitModule,
        AuthModule,
        WorkspacesModule,
        CalculatorsModule,
        WebhooksModule,
        SubmissionsModule,
        DeliveryModule,
        // The API under /api/v1; probes and metrics (health, metrics modules) stay at the root.
        RouterModule.register(API_MODULES.map((module) => ({ path: API_PREFIX, module }))),
        HealthModule,
        MetricsApiModule,
        ...(config.workerEnabled ? [DeliveryWorkerModule] : []),
      ],
    };
  }

  configure(consumer: MiddlewareConsumer): void {
    // Every path, unknown ones included: the request log first, so every later step has the request id.
    consumer.apply(requestLogger(this.logger.pino), this.metrics.middleware, apiSecurityHeaders()).forRoutes('*');
    consumer.apply(this.rateLimiter.middleware).forRoutes(...API_CONTROLLERS);
  }
}
