import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { ScheduledJob } from '../../scheduling/scheduled-job.js';

const BATCH = 1000;
// Between two deletes: the worker's own writes to these tables never queue behind a long run of them.
const BATCH_PAUSE_MS = 50;

/*
 * SQL, as the ORM cannot say DELETE ... WHERE id IN (... FOR UPDATE SKIP LOCKED). Each statement is its
 * own short transaction over at most BATCH rows read through the ended-rows index (completed_at IS NOT
 * NULL, so never a pending delivery); rows another transaction holds (a retry taking a delivery back,
 * another worker's retention) are skipped, not waited for. Attempts go with their delivery (FK cascade).
 */
const DELETE_ENDED_DELIVERIES = `
  DELETE FROM deliveries WHERE id IN (
    SELECT id FROM deliveries
    WHERE completed_at < now() - make_interval(secs => $1::float / 1000) AND status <> 'pending'
    ORDER BY completed_at LIMIT $2 FOR UPDATE SKIP LOCKED)`;
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
  ) {}

  /**
   * Deletes what retention lets go; returns how many rows (deliveries and recoveries) it deleted. Stops
   * between batches once `signal` is aborted.
   */
  @ScheduledJob({ name: 'delete-deliveries-past-retention', every: (config) => config.sweepIntervalMs })
  async purgeOnce(signal?: AbortSignal): Promise<number> {
    let deleted = 0;
    for (const statement of [DELETE_ENDED_DELIVERIES, DELETE_ENDED_RECOVERIES]) {
      deleted += await this.deleteInBatches(statement, signal);
    }
    return deleted;
  }

  private async deleteInBatches(statement: string, signal?: AbortSignal): Promise<number> {
    let deleted = 0;
    while (!signal?.aborted) {
      const [, count] = (await this.dataSource.query(statement, [this.config.deliveryRetentionMs, BATCH])) as [
        unknown,
        number,
      ];
      deleted += count;
      if (count < BATCH) break;
      await new Promise((resolve) => setTimeout(resolve, BATCH_PAUSE_MS));
    }
    return deleted;
  }
}
