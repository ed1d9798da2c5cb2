import { Module } from '@nestjs/common';
import { DeliveryQueueModule } from '../delivery/delivery-queue.module.js';
import { BacklogMetrics } from './backlog.metrics.js';
import { HttpMetrics } from './http.metrics.js';
import { MetricsController } from './metrics.controller.js';

/** The api's side of metrics: GET /metrics, request durations and the delivery backlog gauges. */
@Module({
  imports: [DeliveryQueueModule],
  controllers: [MetricsController],
  providers: [HttpMetrics, BacklogMetrics],
  exports: [HttpMetrics],
})
export class MetricsApiModule {}
