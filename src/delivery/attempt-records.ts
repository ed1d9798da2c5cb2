import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Batcher } from '../core/batcher.js';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { prepared, queryPrepared } from '../core/database/prepared.js';
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

// Every attempt finished since the last write goes in one statement (group commit). The update only
// applies to the attempt the delivery is at, so a stale duplicate cannot overwrite a newer result.
const RECORD_ATTEMPTS = prepared(
  'delivery_record_attempts',
  `
  WITH input AS (
    SELECT * FROM unnest($1::varchar[], $2::varchar[], $3::int[], $4::varchar[], $5::timestamptz[], $6::int[],
                         $7::int[], $8::text[], $9::text[], $10::boolean[], $11::varchar[], $12::timestamptz[],
                         $13::timestamptz[])
      AS i(delivery_id, attempt_id, attempt_number, trigger, started_at, duration_ms, status_code, response_body,
           error, succeeded, status, next_attempt_at, finished_at)
  ), attempt AS (
    INSERT INTO delivery_attempts (id, delivery_id, attempt_number, trigger, started_at, duration_ms, status_code,
                                   response_body, error, succeeded)
    SELECT attempt_id, delivery_id, attempt_number, trigger, started_at, duration_ms, status_code, response_body,
           error, succeeded
    FROM input
  ), updated AS (
    UPDATE deliveries d SET
      status = CASE WHEN d.status = 'cancelled' AND i.status = 'pending' THEN 'cancelled' ELSE i.status END,
      next_attempt_at = CASE WHEN d.status = 'cancelled' THEN NULL ELSE i.next_attempt_at END,
      completed_at = CASE WHEN d.status = 'cancelled' AND i.status = 'pending' THEN d.completed_at
                          WHEN i.status = 'pending' THEN NULL ELSE i.finished_at END,
      attempt_count = i.attempt_number, last_attempt_at = i.started_at, last_status_code = i.status_code,
      last_error = i.error, updated_at = i.finished_at, lease_until = NULL
    FROM input i
    WHERE d.id = i.delivery_id AND d.attempt_count = i.attempt_number - 1
    RETURNING d.id, d.status
  )
  SELECT id, status FROM updated`,
);

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
    const rows = await queryPrepared<{ id: string; status: DeliveryStatus }>(this.dataSource, RECORD_ATTEMPTS, [
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
