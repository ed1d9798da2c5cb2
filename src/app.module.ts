import { DynamicModule, MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { APP_GUARD, RouterModule } from '@nestjs/core';
import { ApiKeyGuard } from './auth/api-key.guard.js';
import { AuditModule } from './audit/audit.module.js';
import { AuthModule } from './auth/auth.module.js';
import { IpRateLimitGuard, KeyRateLimitGuard } from './auth/rate-limit.guards.js';
import { CalculatorsModule } from './calculators/calculators.module.js';
import type { AppConfig } from './core/config/config.js';
import { coreImports } from './core/core-imports.js';
import { PoolWarmer } from './core/database/pool-warmer.js';
import { API_PREFIX } from './core/http/configure-app.js';
import { HttpPipelineModule } from './core/http/http.module.js';
import { LoggingModule } from './core/logging/logging.module.js';
import { RateLimitModule } from './core/security/rate-limit.module.js';
import { RedisModule } from './core/redis/redis.module.js';
import { apiSecurityHeaders } from './core/security/security-headers.js';
import { DeliveryWorkerModule } from './delivery/delivery-worker.module.js';
import { DeliveryModule } from './delivery/delivery.module.js';
import { HealthModule } from './health/health.module.js';
import { IdempotencyModule } from './idempotency/idempotency.module.js';
import { HttpMetrics } from './metrics/http.metrics.js';
import { MetricsApiModule } from './metrics/metrics-api.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { PortalModule } from './portal/portal.module.js';
import { MaintenanceQueueModule } from './scheduling/maintenance-queue.module.js';
import { OperationalWebhooksModule } from './operational-webhooks/operational-webhooks.module.js';
import { SchedulingModule } from './scheduling/scheduling.module.js';
import { SubmissionsModule } from './submissions/submissions.module.js';
import { WebhooksModule } from './webhooks/webhooks.module.js';
import { WorkspacesModule } from './workspaces/workspaces.module.js';

/** The modules whose controllers make up the API under the prefix (health lives outside it). */
export const API_MODULES = [
  WebhooksModule,
  CalculatorsModule,
  WorkspacesModule,
  SubmissionsModule,
  DeliveryModule,
  AuditModule,
  OperationalWebhooksModule,
  PortalModule,
];

/** The API process: the HTTP API and, unless WORKER_ENABLED=false, the delivery worker in-process. */
@Module({})
export class AppModule implements NestModule {
  constructor(private readonly metrics: HttpMetrics) {}

  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ...coreImports(config),
        LoggingModule,
        RedisModule,
        HttpPipelineModule,
        IdempotencyModule, // after HttpPipelineModule: its interceptor needs the body that one reads
        MetricsModule,
        RateLimitModule,
        AuthModule,
        WorkspacesModule,
        CalculatorsModule,
        WebhooksModule,
        SubmissionsModule,
        DeliveryModule,
        AuditModule,
        OperationalWebhooksModule,
        PortalModule,
        // The API under /api/v1; the probes (health module) stay at the root.
        RouterModule.register(API_MODULES.map((module) => ({ path: API_PREFIX, module }))),
        HealthModule,
        MetricsApiModule,
        MaintenanceQueueModule, // for the queue dashboard
        ...(config.workerEnabled ? [DeliveryWorkerModule, SchedulingModule] : []),
      ],
      // In this order: the per-IP limit (and an already known key's) before authentication, the per-key limit after it.
      providers: [
        PoolWarmer,
        { provide: APP_GUARD, useClass: IpRateLimitGuard },
        { provide: APP_GUARD, useExisting: ApiKeyGuard },
        { provide: APP_GUARD, useClass: KeyRateLimitGuard },
      ],
    };
  }

  configure(consumer: MiddlewareConsumer): void {
    // Every path, unknown ones included (the request log, LoggingModule's, comes before these).
    consumer.apply(this.metrics.middleware, apiSecurityHeaders()).forRoutes('*');
  }
}
