import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Batcher } from '../core/batcher.js';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { queryPrepared } from '../core/database/prepared.js';
import { ATTEMPT_RECORD } from '../core/database/statements.js';
import { newId } from '../core/ids.js';
import type { DeliveryStatus } from './delivery.entity.js';

export interface AttemptRecord {
  deliveryId: string;
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

const MAX_BATCH = 500;

@Injectable()
export class AttemptRecords {
  private readonly batcher: Batcher<AttemptRecord, Recorded>;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    const concurrent = Math.max(1, Math.floor(config.databasePoolSize / 4));
    this.batcher = new Batcher((records) => this.write(records), concurrent, MAX_BATCH);
  }

  record(record: AttemptRecord): Promise<Recorded> {
    return this.batcher.add(record);
  }

  private async write(records: AttemptRecord[]): Promise<Recorded[]> {
    const column = <K extends keyof AttemptRecord>(key: K) => records.map((r) => r[key]);
    const rows = await queryPrepared<{ id: string; status: DeliveryStatus }>(this.dataSource, ATTEMPT_RECORD, [
      column('deliveryId'),
      records.map(() => newId()),
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
    ]);
    const status = new Map(rows.map((row) => [row.id, row.status]));
    return records.map((r) => status.get(r.deliveryId) ?? null);
  }
}
