import { Module } from '@nestjs/common';
import { HostWakesModule } from '../delivery/host-wakes.module.js';
import { DeliveryStoreModule } from '../delivery/store/delivery-store.module.js';
import { BacklogMetrics } from './backlog.metrics.js';
import { HostMetrics } from './host.metrics.js';
import { HttpMetrics } from './http.metrics.js';
import { MetricsServer } from './metrics-server.js';

/** The api's side of metrics: request durations, the delivery backlog and host admission gauges, and /metrics on METRICS_PORT (never PORT). */
@Module({
  imports: [HostWakesModule, DeliveryStoreModule],
  providers: [HttpMetrics, BacklogMetrics, HostMetrics, MetricsServer],
  exports: [HttpMetrics],
})
export class MetricsApiModule {}
