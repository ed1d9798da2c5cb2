import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { DeliveryStore } from '../store/delivery-store.js';
import { ScheduledJob } from '../../scheduling/scheduled-job.js';

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
export class DeliveryRetention {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly store: DeliveryStore,
  ) {}

  /**
   * Deletes what retention lets go; returns how many rows (deliveries and recoveries) it deleted. Stops
   * between batches once `signal` is aborted.
   */
  @ScheduledJob({ name: 'delete-deliveries-past-retention', every: (config) => config.sweepIntervalMs })
  async purgeOnce(signal?: AbortSignal): Promise<number> {
    let deleted = 0;
    deleted += await this.deleteInBatches(
      (batch) => this.store.expireEnded(this.config.deliveryRetentionMs, batch),
      signal,
    );
    deleted += await this.deleteInBatches((batch) => this.deleteEndedRecoveries(batch), signal);
    return deleted;
  }

  private async deleteEndedRecoveries(batch: number): Promise<number> {
    const [, count] = (await this.dataSource.query(DELETE_ENDED_RECOVERIES, [
      this.config.deliveryRetentionMs,
      batch,
    ])) as [unknown, number];
    return count;
  }

  private async deleteInBatches(
    deleteBatch: (batch: number) => Promise<number>,
    signal?: AbortSignal,
  ): Promise<number> {
    let deleted = 0;
    while (!signal?.aborted) {
      const count = await deleteBatch(BATCH);
      deleted += count;
      if (count < BATCH) break;
      await new Promise((resolve) => setTimeout(resolve, BATCH_PAUSE_MS));
    }
    return deleted;
  }
}
