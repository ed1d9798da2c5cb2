import { Inject, Injectable } from '@nestjs/common';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { ScheduledJob } from '../../scheduling/scheduled-job.js';
import { HostWakes } from '../host-wakes.js';
import { DeliveryStore } from '../store/delivery-store.js';

const SWEEP_PAGE = 500;

/**
 * Postgres is the one schedule: a host with a delivery due for longer than a sweep interval has lost its
 * wake (a worker died between a drain's end and its mark, Redis restarted empty), or its drain is behind.
 * Each such host is woken (a wake in time is left as it is). A pass looks at the hosts with pending
 * deliveries, in pages, a probe per host and webhook: its cost follows hosts, not the backlog.
 */
@Injectable()
export class DeliverySweeper {
  constructor(
    private readonly store: DeliveryStore,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly wakes: HostWakes,
  ) {}

  /** Wakes the hosts overdue by more than one sweep interval; returns how many. Stops between pages once aborted. */
  @ScheduledJob({ name: 'sweep-overdue-deliveries', every: (config) => config.sweepIntervalMs })
  async sweepOnce(signal?: AbortSignal): Promise<number> {
    let woken = 0;
    const dueBefore = await this.store.dueBefore(this.config.sweepIntervalMs);
    let after = '';
    while (!signal?.aborted) {
      const hosts = await this.store.hostsAfter(after, SWEEP_PAGE);
      const overdue = hosts.filter(({ at }) => at !== null && at <= dueBefore);
      await this.wakes.wakeOrThrow(overdue.map(({ host, at }) => ({ host, at: at! })));
      woken += overdue.length;
      if (hosts.length < SWEEP_PAGE) break;
      after = hosts[hosts.length - 1].host;
    }
    return woken;
  }
}
