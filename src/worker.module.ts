import { DynamicModule, Module } from '@nestjs/common';
import { AuditEventsModule } from './audit/audit-events.module.js';
import { coreImports } from './core/core-imports.js';
import { PoolWarmer } from './core/database/pool-warmer.js';
import type { AppConfig } from './core/config/config.js';
import { LoggingModule } from './core/logging/logging.module.js';
import { DeliveryWorkerModule } from './delivery/delivery-worker.module.js';
import { IdempotencyKeysModule } from './idempotency/idempotency-keys.module.js';
import { MetricsServer } from './metrics/metrics-server.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { PortalLinksModule } from './portal/portal-links.module.js';
import { SchedulingModule } from './scheduling/scheduling.module.js';

/**
 * The worker process: the shared core, the delivery consumer and the scheduled work (the purge of expired
 * idempotency keys among it), no HTTP API (only /metrics on METRICS_PORT).
 */
@Module({})
export class WorkerModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: WorkerModule,
      imports: [
        ...coreImports(config),
        LoggingModule,
        MetricsModule,
        DeliveryWorkerModule,
        IdempotencyKeysModule,
        AuditEventsModule, // its retention run
        PortalLinksModule, // its retention run
        SchedulingModule,
      ],
      providers: [MetricsServer, PoolWarmer],
    };
  }
}
