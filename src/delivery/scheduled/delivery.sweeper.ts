import { Inject, Injectable } from '@nestjs/common';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { ScheduledJob } from '../../scheduling/scheduled-job.js';
import { DeliveryQueue } from '../delivery-queue.js';
import { DeliveryStore } from '../store/delivery-store.js';

const SWEEP_BATCH = 1000;

/**
 * Postgres is the source of truth: a pending delivery that is due but has no job (a crash between
 * commit and enqueue, Redis restarted empty) is enqueued again. A pass looks at every overdue delivery,
 * in pages, so a backlog of deliveries whose jobs wait (on a capped destination, say) cannot hide a lost
 * job behind it; only those without a job are added (a backlog's jobs are many, and adding one that
 * exists costs as much as adding it).
 */
@Injectable()
export class DeliverySweeper {
  constructor(
    private readonly store: DeliveryStore,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly queue: DeliveryQueue,
  ) {}

  /**
   * Enqueues due pending deliveries (due for longer than one sweep interval) that have no job; returns how
   * many. Stops between pages once `signal` is aborted: shutdown waits for one page, not a whole pass.
   */
  @ScheduledJob({ name: 'sweep-overdue-deliveries', every: (config) => config.sweepIntervalMs })
  async sweepOnce(signal?: AbortSignal): Promise<number> {
    let enqueued = 0;
    const dueBefore = await this.store.dueBefore(this.config.sweepIntervalMs);
    let after: { nextAttemptAt: Date | string; id: string } = { nextAttemptAt: '-infinity', id: '' };
    while (!signal?.aborted) {
      const rows = await this.store.overdue(dueBefore, after, SWEEP_BATCH);
      const lost = await this.queue.withoutJob(
        rows.map((r) => ({
          deliveryId: r.id,
          createdAt: r.createdAt,
          url: r.url,
          workspaceId: r.workspaceId,
          webhookId: r.webhookId,
        })),
      );
      await this.queue.add(lost);
      enqueued += lost.length;
      if (rows.length < SWEEP_BATCH) break;
      after = rows[rows.length - 1];
    }
    return enqueued;
  }
}
