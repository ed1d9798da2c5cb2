import { Global, Module } from '@nestjs/common';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { DeliveryMetrics } from './delivery.metrics.js';

/** One registry per process (not prom-client's global one), with Node's process metrics. */
@Global()
@Module({
  providers: [
    {
      provide: Registry,
      useFactory: () => {
        const registry = new Registry();
        collectDefaultMetrics({ register: registry });
        return registry;
      },
    },
    DeliveryMetrics,
  ],
  exports: [Registry, DeliveryMetrics],
})
export class MetricsModule {}
