import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { DeliveryQueue } from './delivery-queue.js';

const SWEEP_BATCH = 1000;

/**
 * Postgres is the source of truth: a pending delivery that is due but has no job (a crash between
 * commit and enqueue, Redis restarted empty) is enqueued again. Adding a job that exists is a no-op.
 */
@Injectable()
export class DeliverySweeper implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('DeliverySweeper');
  private timer?: NodeJS.Timeout;
  private running?: Promise<number>;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly queue: DeliveryQueue,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.sweepOnce(), this.config.sweepIntervalMs);
    this.timer.unref();
  }

  /** Enqueues due pending deliveries (due for longer than one sweep interval); returns how many. */
  async sweepOnce(): Promise<number> {
    if (this.running) return this.running;
    this.running = this.sweep().finally(() => (this.running = undefined));
    return this.running;
  }

  private async sweep(): Promise<number> {
    try {
      const rows: { id: string; url: string; workspace_id: string }[] = await this.dataSource.query(
        `SELECT d.id, w.url, d.workspace_id FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id
         WHERE d.status = 'pending' AND d.next_attempt_at <= now() - make_interval(secs => $1::float / 1000)
         ORDER BY d.next_attempt_at LIMIT $2`,
        [this.config.sweepIntervalMs, SWEEP_BATCH],
      );
      await this.queue.enqueue(rows.map((r) => ({ deliveryId: r.id, url: r.url, workspaceId: r.workspace_id })));
      return rows.length;
    } catch (error) {
      this.logger.warn(`Sweep failed, next in ${this.config.sweepIntervalMs} ms: ${(error as Error).message}`);
      return 0;
    }
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
