import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { WebhookEntity } from '../webhooks/webhook.entity.js';
import { DeliveryQueue } from './delivery-queue.js';
import { DeliveryEntity } from './delivery.entity.js';

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
      const dueBefore = new Date(Date.now() - this.config.sweepIntervalMs);
      const due = await this.dataSource
        .createQueryBuilder(DeliveryEntity, 'd')
        .innerJoin(WebhookEntity, 'w', 'w.id = d.webhookId')
        .select('d.id', 'deliveryId')
        .addSelect('w.url', 'url')
        .addSelect('d.workspaceId', 'workspaceId')
        .where("d.status = 'pending' AND d.nextAttemptAt <= :dueBefore", { dueBefore })
        .orderBy('d.nextAttemptAt')
        .limit(SWEEP_BATCH)
        .getRawMany<{ deliveryId: string; url: string; workspaceId: string }>();
      await this.queue.enqueue(due);
      return due.length;
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
