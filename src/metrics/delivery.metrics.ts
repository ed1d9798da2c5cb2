import { Injectable } from '@nestjs/common';
import { Counter, Histogram, Registry } from 'prom-client';

/** Delivery counters, recorded by whichever process runs the worker (api in-process, or dist/worker.js). */
@Injectable()
export class DeliveryMetrics {
  private readonly outcomes: Counter<'outcome'>;
  private readonly attemptDuration: Histogram<'outcome'>;
  private readonly disabled: Counter<'reason'>;

  constructor(registry: Registry) {
    this.outcomes = new Counter({
      name: 'webhook_deliveries_total',
      help: 'Delivery decisions by outcome: succeeded, failed (given up), retry (attempt failed, retried later), cancelled (webhook removed)',
      labelNames: ['outcome'],
      registers: [registry],
    });
    this.attemptDuration = new Histogram({
      name: 'webhook_delivery_attempt_duration_seconds',
      help: 'Duration of one delivery attempt (the HTTP request to the receiver), by outcome',
      labelNames: ['outcome'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60, 120],
      registers: [registry],
    });
    this.disabled = new Counter({
      name: 'webhooks_disabled_automatically_total',
      help: 'Webhooks disabled by the attempt record (DESIGN 7.1), by reason: gone (410), failing (long failure streak)',
      labelNames: ['reason'],
      registers: [registry],
    });
  }

  recordAttempt(status: 'succeeded' | 'failed' | 'pending', durationMs: number): void {
    const outcome = status === 'pending' ? 'retry' : status;
    this.outcomes.inc({ outcome });
    this.attemptDuration.observe({ outcome }, durationMs / 1000);
  }

  recordWebhookDisabled(reason: 'gone' | 'failing'): void {
    this.disabled.inc({ reason });
  }

  recordCancelled(): void {
    this.outcomes.inc({ outcome: 'cancelled' });
  }
}
