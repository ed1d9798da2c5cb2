import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
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
export class DeliverySweeper implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('DeliverySweeper');
  private timer?: NodeJS.Timeout;
  private running?: Promise<number>;
  private stopping = false;

  constructor(
    private readonly store: DeliveryStore,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly queue: DeliveryQueue,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.sweepOnce(), this.config.sweepIntervalMs);
    this.timer.unref();
  }

  /** Enqueues due pending deliveries (due for longer than one sweep interval); returns how many it offered. */
  async sweepOnce(): Promise<number> {
    if (this.running) return this.running;
    this.running = this.sweep().finally(() => (this.running = undefined));
    return this.running;
  }

  private async sweep(): Promise<number> {
    let offered = 0;
    try {
      const dueBefore = await this.store.dueBefore(this.config.sweepIntervalMs);
      let after: { nextAttemptAt: Date | string; id: string } = { nextAttemptAt: '-infinity', id: '' };
      while (!this.stopping) {
        const rows = await this.store.overdue(dueBefore, after, SWEEP_BATCH);
        await this.queue.add(
          rows.map((r) => ({ deliveryId: r.id, url: r.url, workspaceId: r.workspaceId, webhookId: r.webhookId })),
        );
        offered += rows.length;
        if (rows.length < SWEEP_BATCH) break;
        after = rows[rows.length - 1];
      }
    } catch (error) {
      this.logger.warn(`Sweep failed, next in ${this.config.sweepIntervalMs} ms: ${(error as Error).message}`);
    }
    return offered;
  }

  /** Stops between pages: shutdown waits for one page at most, not for a whole pass over a large backlog. */
  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    clearInterval(this.timer);
    await this.running;
  }
}
