import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { DeliveryStore } from '../store/delivery-store.js';

const BATCH = 1000;
// Between two deletes: the worker's own writes to these tables never queue behind a long run of them.
const BATCH_PAUSE_MS = 50;

// As the store's EXPIRE_ENDED for deliveries: small batches, rows another transaction holds skipped.
const DELETE_ENDED_RECOVERIES = `
  DELETE FROM recoveries WHERE id IN (
    SELECT id FROM recoveries
    WHERE completed_at < now() - make_interval(secs => $1::float / 1000) AND status <> 'running'
    ORDER BY completed_at LIMIT $2 FOR UPDATE SKIP LOCKED)`;

/**
 * Retention (DESIGN 7.7): deliveries that ended more than DELIVERY_RETENTION ago are deleted with their
 * attempts, and ended recoveries likewise, in small batches each SWEEP_INTERVAL_MS. Submissions stay.
 */
@Injectable()
export class DeliveryRetention implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('DeliveryRetention');
  private timer?: NodeJS.Timeout;
  private running?: Promise<number>;
  private stopping = false;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly store: DeliveryStore,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.purgeOnce(), this.config.sweepIntervalMs);
    this.timer.unref();
  }

  /** Deletes what retention lets go; returns how many rows (deliveries and recoveries) it deleted. */
  purgeOnce(): Promise<number> {
    this.running ??= this.purge().finally(() => (this.running = undefined));
    return this.running;
  }

  private async purge(): Promise<number> {
    let deleted = 0;
    try {
      deleted += await this.deleteInBatches((batch) => this.store.expireEnded(this.config.deliveryRetentionMs, batch));
      deleted += await this.deleteInBatches((batch) => this.deleteEndedRecoveries(batch));
    } catch (error) {
      this.logger.warn(`Retention pass failed, next in ${this.config.sweepIntervalMs} ms: ${(error as Error).message}`);
    }
    return deleted;
  }

  private async deleteEndedRecoveries(batch: number): Promise<number> {
    const [, count] = (await this.dataSource.query(DELETE_ENDED_RECOVERIES, [
      this.config.deliveryRetentionMs,
      batch,
    ])) as [unknown, number];
    return count;
  }

  private async deleteInBatches(deleteBatch: (batch: number) => Promise<number>): Promise<number> {
    let deleted = 0;
    while (!this.stopping) {
      const count = await deleteBatch(BATCH);
      deleted += count;
      if (count < BATCH) break;
      await new Promise((resolve) => setTimeout(resolve, BATCH_PAUSE_MS));
    }
    return deleted;
  }

  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    clearInterval(this.timer);
    await this.running;
  }
}
