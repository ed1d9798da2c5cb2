import { Injectable, Logger } from '@nestjs/common';
import { Gauge, Registry } from 'prom-client';
import { withTimeout } from '../core/with-timeout.js';
import { HostStates, type HostState } from '../delivery/host-state.js';

// A scrape must answer even while Redis hangs; the gauges are then left out.
const COLLECT_TIMEOUT_MS = 2_000;
// The three gauges of one scrape share one read of the hosts.
const SNAPSHOT_MS = 1_000;

/** Each host's adaptive admission, read from Redis on each scrape (hosts idle for long have none). */
@Injectable()
export class HostMetrics {
  private readonly logger = new Logger('HostMetrics');
  private snapshot?: { at: number; hosts: Promise<HostState[]> };

  constructor(
    registry: Registry,
    private readonly states: HostStates,
  ) {
    const read = () => this.read();
    const gauge = (name: string, help: string, labelNames: string[], set: (g: Gauge, h: HostState) => void) =>
      new Gauge({
        name,
        help,
        labelNames,
        registers: [registry],
        async collect() {
          this.reset();
          for (const host of await read()) set(this, host);
        },
      });
    gauge(
      'webhook_host_concurrency_limit',
      'Attempts allowed in flight to a host (adaptive), by host',
      ['host'],
      (g, h) => g.set({ host: h.host }, h.limit),
    );
    gauge(
      'webhook_host_in_flight',
      "Attempts in flight to a host (its drain's, as last saved), by host",
      ['host'],
      (g, h) => g.set({ host: h.host }, h.inFlight),
    );
    gauge(
      'webhook_host_limit_last_change_timestamp_seconds',
      "When a host's limit last changed, by host and reason: growth, latency, 429, 503, refused, reset, timeout, paused",
      ['host', 'reason'],
      (g, h) => {
        if (h.lastChange) g.set({ host: h.host, reason: h.lastChange.reason }, Date.parse(h.lastChange.at) / 1000);
      },
    );
  }

  private read(): Promise<HostState[]> {
    const now = Date.now();
    if (!this.snapshot || now - this.snapshot.at > SNAPSHOT_MS) {
      const hosts = withTimeout(
        this.states.list(),
        COLLECT_TIMEOUT_MS,
        `no answer within ${COLLECT_TIMEOUT_MS} ms`,
      ).catch((error: Error) => {
        this.logger.warn(`Host admission state unavailable: ${error.message}`);
        return [];
      });
      this.snapshot = { at: now, hosts };
    }
    return this.snapshot.hosts;
  }
}
