import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { DeliveryPartitions } from '../store/delivery-partitions.js';
import { ScheduledJob } from '../../scheduling/scheduled-job.js';

const BATCH = 1000;
// Between two deletes: the worker's own writes never queue behind a long run of them.
const BATCH_PAUSE_MS = 50;

// Small batches, rows another transaction holds skipped.
const DELETE_ENDED_RECOVERIES = `
  DELETE FROM recoveries WHERE id IN (
    SELECT id FROM recoveries
    WHERE completed_at < now() - make_interval(secs => $1::float / 1000) AND status <> 'running'
    ORDER BY completed_at LIMIT $2 FOR UPDATE SKIP LOCKED)`;

/**
 * Retention (DESIGN 7.7), each SWEEP_INTERVAL_MS: the partitions of deliveries (with their attempts')
 * past DELIVERY_RETENTION are dropped whole once none of their deliveries is pending or ended within it;
 * ended recoveries are deleted in small batches. Submissions stay.
 */
@Injectable()
export class DeliveryRetention {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly partitions: DeliveryPartitions,
  ) {}

  /**
   * Drops and deletes what retention lets go; returns the partitions dropped and how many recoveries were
   * deleted. Stops between steps once `signal` is aborted.
   */
  @ScheduledJob({ name: 'delete-deliveries-past-retention', every: (config) => config.sweepIntervalMs })
  async purgeOnce(signal?: AbortSignal): Promise<{ partitions: string[]; recoveries: number }> {
    const partitions = await this.partitions.dropExpired(this.config.deliveryRetentionMs, signal);
    let recoveries = 0;
    while (!signal?.aborted) {
      const count = await this.deleteEndedRecoveries(BATCH);
      recoveries += count;
      if (count < BATCH) break;
      await new Promise((resolve) => setTimeout(resolve, BATCH_PAUSE_MS));
    }
    return { partitions, recoveries };
  }

  private async deleteEndedRecoveries(batch: number): Promise<number> {
    const [, count] = (await this.dataSource.query(DELETE_ENDED_RECOVERIES, [
      this.config.deliveryRetentionMs,
      batch,
    ])) as [unknown, number];
    return count;
  }
}
