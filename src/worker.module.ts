import { DynamicModule, Module } from '@nestjs/common';
import { coreImports } from './app.module.js';
import type { AppConfig } from './core/config/config.js';
import { DeliveryWorkerModule } from './delivery/delivery-worker.module.js';

/** The worker process: the shared core and the delivery consumer, no HTTP API. */
@Module({})
export class WorkerModule {
  static forRoot(config: AppConfig): DynamicModule {
    return { module: WorkerModule, imports: [...coreImports(config), DeliveryWorkerModule] };
  }
}
