import { Inject, Injectable } from '@nestjs/common';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { ScheduledJob } from '../../scheduling/scheduled-job.js';
import { DeliveryQueue } from '../delivery-queue.js';
import { DeliveryStore } from '../store/delivery-store.js';

const SWEEP_BATCH = 1000;

/**
 * Postgres is the source of truth: a pending delivery that is due but has no job (a crash between
 * commit and enqueue, Redis restarted empty) is enqueued again. Adding a job that exists is a no-op,
 * so a pass offers every overdue delivery to the queue, in pages: a backlog of deliveries whose jobs
 * wait (on a capped destination, say) cannot hide a lost job behind it.
 */
@Injectable()
export class DeliverySweeper {
  constructor(
    private readonly store: DeliveryStore,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly queue: DeliveryQueue,
  ) {}

  /**
   * Enqueues due pending deliveries (due for longer than one sweep interval); returns how many it offered.
   * Stops between pages once `signal` is aborted: shutdown waits for one page, not a whole pass.
   */
  @ScheduledJob({ name: 'sweep-overdue-deliveries', every: (config) => config.sweepIntervalMs })
  async sweepOnce(signal?: AbortSignal): Promise<number> {
    let offered = 0;
    const dueBefore = await this.store.dueBefore(this.config.sweepIntervalMs);
    let after: { nextAttemptAt: Date | string; id: string } = { nextAttemptAt: '-infinity', id: '' };
    while (!signal?.aborted) {
      const rows = await this.store.overdue(dueBefore, after, SWEEP_BATCH);
      await this.queue.add(
        rows.map((r) => ({
          deliveryId: r.id,
          createdAt: r.createdAt,
          url: r.url,
          workspaceId: r.workspaceId,
          webhookId: r.webhookId,
        })),
      );
      offered += rows.length;
      if (rows.length < SWEEP_BATCH) break;
      after = rows[rows.length - 1];
    }
    return offered;
  }
}
