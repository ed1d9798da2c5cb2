import { Injectable, Logger } from '@nestjs/common';
import { Gauge, Registry } from 'prom-client';
import { HostWakes } from '../delivery/host-wakes.js';
import { DeliveryStore } from '../delivery/store/delivery-store.js';
import { withTimeout } from '../core/with-timeout.js';

// A scrape must answer even while Redis or Postgres hangs; the gauge is then left out.
const COLLECT_TIMEOUT_MS = 2_000;
const QUEUE_STATES = ['waiting', 'delayed', 'active'] as const;

const collected = <T>(promise: Promise<T>) =>
  withTimeout(promise, COLLECT_TIMEOUT_MS, `no answer within ${COLLECT_TIMEOUT_MS} ms`);

/** Backlog gauges, read on each scrape: host wakes from Redis, the most overdue delivery from Postgres. */
@Injectable()
export class BacklogMetrics {
  private readonly logger = new Logger('BacklogMetrics');

  constructor(registry: Registry, wakes: HostWakes, store: DeliveryStore) {
    const logger = this.logger;
    new Gauge({
      name: 'webhook_delivery_queue_jobs',
      help: 'Host wakes by state (waiting, delayed, active: a drain running); one per host with pending deliveries',
      labelNames: ['state'],
      registers: [registry],
      async collect() {
        this.reset();
        try {
          const shards = await collected(Promise.all(wakes.queues.map((q) => q.getJobCounts(...QUEUE_STATES))));
          for (const state of QUEUE_STATES)
            this.set(
              { state },
              shards.reduce((n, counts) => n + (counts[state] ?? 0), 0),
            );
        } catch (error) {
          logger.warn(`Queue job counts unavailable: ${(error as Error).message}`);
        }
      },
    });
    new Gauge({
      name: 'webhook_delivery_oldest_pending_age_seconds',
      help: 'How long the most overdue pending delivery has been due, in seconds (0 when none is overdue)',
      registers: [registry],
      async collect() {
        this.reset();
        try {
          this.set(await collected(store.oldestPendingAgeSeconds()));
        } catch (error) {
          logger.warn(`Oldest pending delivery age unavailable: ${(error as Error).message}`);
        }
      },
    });
  }
}
