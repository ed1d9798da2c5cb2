import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { ScheduledJob } from '../../scheduling/scheduled-job.js';
import { DeliveryQueue } from '../delivery-queue.js';

const SWEEP_BATCH = 1000;

// Taken once per pass, so rows falling due meanwhile wait for the next one and a pass always ends.
const DUE_BEFORE = `SELECT now() - make_interval(secs => $1::float / 1000) AS "dueBefore"`;

// Keyset paging on (next_attempt_at, id): each page starts after the last row of the previous one.
const OVERDUE_PAGE = `
  SELECT d.id, d.next_attempt_at AS "nextAttemptAt", w.url, d.workspace_id AS "workspaceId" FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id
  WHERE d.status = 'pending' AND d.next_attempt_at <= $1 AND (d.next_attempt_at, d.id) > ($2::timestamptz, $3)
  ORDER BY d.next_attempt_at, d.id LIMIT $4`;

/**
 * Postgres is the source of truth: a pending delivery that is due but has no job (a crash between
 * commit and enqueue, Redis restarted empty) is enqueued again. Adding a job that exists is a no-op,
 * so a pass offers every overdue delivery to the queue, in pages: a backlog of deliveries whose jobs
 * wait (on a capped destination, say) cannot hide a lost job behind it.
 */
@Injectable()
export class DeliverySweeper {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
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
    const [{ dueBefore }]: { dueBefore: Date }[] = await this.dataSource.query(DUE_BEFORE, [
      this.config.sweepIntervalMs,
    ]);
    let after: { nextAttemptAt: Date | string; id: string } = { nextAttemptAt: '-infinity', id: '' };
    while (!signal?.aborted) {
      const rows: { id: string; nextAttemptAt: Date; url: string; workspaceId: string }[] = await this.dataSource.query(
        OVERDUE_PAGE,
        [dueBefore, after.nextAttemptAt, after.id, SWEEP_BATCH],
      );
      await this.queue.add(rows.map((r) => ({ deliveryId: r.id, url: r.url, workspaceId: r.workspaceId })));
      offered += rows.length;
      if (rows.length < SWEEP_BATCH) break;
      after = rows[rows.length - 1];
    }
    return offered;
  }
}
