import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Batcher } from '../../core/batcher.js';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { queryPrepared } from '../../core/database/prepared.js';
import { ATTEMPT_RECORD, SKIP_PENDING } from './delivery-statements.js';
import { DeliveryMetrics } from '../../metrics/delivery.metrics.js';
import { OperationalEvents } from '../../operational-webhooks/operational-events.js';
import type { DisabledReason } from '../../webhooks/webhook.entity.js';
import type { DeliveryStatus } from '../delivery.entity.js';

export interface AttemptRecord {
  deliveryId: string;
  /** The delivery's created_at, which names its partition and its attempts'. */
  deliveryCreatedAt: Date;
  attemptNumber: number;
  trigger: 'scheduled' | 'manual';
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  responseExcerpt: string | null;
  error: string | null;
  succeeded: boolean;
  /** What the attempt decided: `pending` means retried at `nextAttemptAt`. */
  status: 'pending' | 'succeeded' | 'failed';
  nextAttemptAt: Date | null;
  finishedAt: Date;
}

/**
 * The delivery's status once recorded; `cancelled` when the webhook was removed while the request was
 * out (the attempt is logged, never retried); null when another attempt already recorded this one.
 */
export type Recorded = DeliveryStatus | null;

type RecordRow =
  | { kind: 'delivery'; id: string; status: DeliveryStatus; workspace_id: null }
  | { kind: 'disabled'; id: string; status: Exclude<DisabledReason, 'manual'>; workspace_id: string };

const MAX_BATCH = 500;
// A record is off the path to the receiver (its host's slot is free once the answer came): waiting for
// others costs no latency a receiver sees, and at a moderate rate saves Postgres a statement per attempt.
const LINGER_MS = 20;

@Injectable()
export class AttemptRecords {
  private readonly logger = new Logger('AttemptRecords');
  private readonly batcher: Batcher<AttemptRecord, Recorded>;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly metrics: DeliveryMetrics,
    private readonly events: OperationalEvents,
  ) {
    const concurrent = Math.max(1, Math.floor(config.databasePoolSize / 4));
    this.batcher = new Batcher((records) => this.write(records), concurrent, MAX_BATCH, LINGER_MS);
  }

  record(record: AttemptRecord): Promise<Recorded> {
    return this.batcher.add(record);
  }

  private async write(records: AttemptRecord[]): Promise<Recorded[]> {
    const column = <K extends keyof AttemptRecord>(key: K) => records.map((r) => r[key]);
    const rows = await queryPrepared<RecordRow>(this.dataSource, ATTEMPT_RECORD, [
      column('deliveryId'),
      column('attemptNumber'),
      column('trigger'),
      column('startedAt'),
      column('durationMs'),
      column('statusCode'),
      column('responseExcerpt'),
      column('error'),
      column('succeeded'),
      column('status'),
      column('nextAttemptAt'),
      column('finishedAt'),
      this.config.webhookDisable.minFailures,
      this.config.webhookDisable.afterMs,
      column('deliveryCreatedAt'),
    ]);
    const status = new Map<string, DeliveryStatus>();
    const disabled: string[] = [];
    for (const row of rows) {
      if (row.kind === 'delivery') status.set(row.id, row.status);
      else {
        disabled.push(row.id);
        await this.disabled(row.id, row.workspace_id, row.status);
      }
    }
    this.events.afterWebhooksDisabled(disabled);
    this.events.afterDeliveriesEnded(records.filter((r) => status.get(r.deliveryId) === 'failed'));
    return records.map((r) => status.get(r.deliveryId) ?? null);
  }

  /**
   * A webhook this batch disabled (DESIGN 7.1): logged, counted, and its other pending deliveries
   * skipped now rather than at their next attempt (the claim would skip them then anyway).
   */
  private async disabled(
    webhookId: string,
    workspaceId: string,
    reason: Exclude<DisabledReason, 'manual'>,
  ): Promise<void> {
    this.logger.warn({ msg: 'webhook disabled automatically', webhookId, workspaceId, reason });
    this.metrics.recordWebhookDisabled(reason);
    await queryPrepared(this.dataSource, SKIP_PENDING, [webhookId, new Date()]).catch((error: unknown) =>
      this.logger.warn(`Skipping the pending deliveries of ${webhookId} failed: ${error}`),
    );
  }
}
