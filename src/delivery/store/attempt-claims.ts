import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Batcher } from '../../core/batcher.js';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { connectionOf, queryPrepared, queryPreparedOn, type PooledConnection } from '../../core/database/prepared.js';
import type { RetryScheduleName } from '../retry-schedule.js';
import { ATTEMPT_CLAIM, ATTEMPT_UNLOCK, CREATED_AT_OF } from './delivery-statements.js';

/** A webhook's settings (DESIGN 10) as the claim reads them with its row; null: the service default. */
export interface AttemptSettings {
  headers: Record<string, string>;
  timeoutMs: number | null;
  maxInFlight: number | null;
  retrySchedule: RetryScheduleName;
}

export interface AttemptContext {
  /** The delivery's created_at, which names its partition (the record needs it). */
  delivery_created_at: Date;
  attempt_count: number;
  max_attempts: number;
  webhook_id: string;
  url: string;
  secret: string;
  /** The secret before the last rotation, while its overlap lasts (DESIGN 7.5); signs too. */
  previous_secret: string | null;
  /** A test delivery's sample submission id (DESIGN 7.4) when it has no stored submission. */
  submission_id: string;
  calculator_id: string;
  finished: boolean;
  data: Record<string, unknown>;
  meta: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
  settings: AttemptSettings;
  /** An operational event (src/operational-webhooks), sent as it is; the submission's fields are null then. */
  event: Record<string, unknown> | null;
}

/**
 * `claimed`: the webhook's lock is held until `written()` is called, right after the request has been
 * handed to the socket; `cancelled`: the webhook was removed (the delivery is now cancelled);
 * `skipped`: the webhook is disabled (the delivery is now skipped); `busy`: another attempt holds the
 * lease; `ended`: not pending any more (or gone).
 */
export type Claim =
  | { outcome: 'claimed'; context: AttemptContext; written: () => void }
  | { outcome: 'cancelled' | 'skipped' | 'busy' | 'ended' };

type ClaimRow = Omit<AttemptContext, 'delivery_created_at'> & {
  delivery_id: string;
  outcome: 'claimed' | 'cancelled' | 'skipped' | 'busy' | 'ended';
};

interface ToClaim {
  id: string;
  createdAt?: Date;
}

// A request is handed to its socket within a tick of its claim; this bound only guards against a bug.
const FENCE_MAX_MS = 5_000;
const MAX_BATCH = 200;
const MAX_CONCURRENT = 2;
// A submission's deliveries reach the worker a Redis round trip apart: waiting this long claims them in
// one statement instead of one each (SCALING.md, "At a steady 300 submissions/s").
const LINGER_MS = 2;

/**
 * The removal fence, worker side. DELETE /webhooks/{id} takes the webhook's lock exclusively
 * (DeliveryStore.stopWebhook); a claim takes it shared, checks the webhook and the delivery with a snapshot from
 * after the lock, and keeps it only until the request is written: so DELETE waits for requests being
 * written, never for receivers, and no request starts after DELETE has returned. The connection is
 * back in the pool as soon as the batch's requests are written; no transaction is open meanwhile.
 */
@Injectable()
export class AttemptClaims {
  private readonly logger = new Logger('AttemptClaims');
  private readonly batcher: Batcher<ToClaim, Claim>;
  private readonly leaseMs: number;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    // Two claims at once (fewer with a pool under 4, so records, the sweeper and the rest keep half of it):
    // one may wait for a webhook's lock while the other goes on; more only split the same claims into
    // smaller batches (SCALING.md).
    const concurrent = Math.max(1, Math.min(MAX_CONCURRENT, Math.floor(config.databasePoolSize / 2)));
    this.batcher = new Batcher((ids) => this.claimBatch(ids), concurrent, MAX_BATCH, LINGER_MS);
    this.leaseMs = config.deliveryTimeoutMs * 2 + 10_000;
  }

  /** `createdAt`: the delivery's, from its job; without it (an older job) it is looked up first. */
  claim(deliveryId: string, createdAt?: Date): Promise<Claim> {
    return this.batcher.add({ id: deliveryId, createdAt });
  }

  private async claimBatch(batch: ToClaim[]): Promise<Claim[]> {
    const known = await this.withCreatedAt(batch);
    const ids = known.map((d) => d.id);
    const createdAt = new Map(known.map((d) => [d.id, d.createdAt]));
    if (known.length === 0) return batch.map(() => ({ outcome: 'ended' }));
    const connection = await connectionOf(this.dataSource);
    let rows: ClaimRow[];
    try {
      rows = await queryPreparedOn<ClaimRow>(connection.client, ATTEMPT_CLAIM, [
        ids,
        known.map((d) => d.createdAt),
        this.leaseMs,
      ]);
    } catch (error) {
      // Session-level locks the claim took before failing (a timeout, say) must not stay on a pooled connection.
      this.unlocker(connection)();
      throw error;
    }
    const byId = new Map(rows.map((row) => [row.delivery_id, row]));
    let held = rows.filter((row) => row.outcome === 'claimed').length;
    if (held === 0) connection.release(); // nothing locked: the function unlocked what it did not claim
    const unlock = this.unlocker(connection);
    const timer = held > 0 ? setTimeout(() => this.unlockLate(unlock), FENCE_MAX_MS) : undefined;
    const writtenOnce = () => {
      let called = false;
      return () => {
        if (called) return;
        called = true;
        if (--held > 0) return;
        clearTimeout(timer);
        unlock();
      };
    };
    // One delivery can have two jobs (a manual retry's and the sweeper's, say) whose claims land in one
    // batch: the function claims it once, so only the first gets it and the other is told to look later.
    const given = new Set<string>();
    return batch.map(({ id }): Claim => {
      const row = byId.get(id);
      if (!row) return { outcome: 'ended' };
      if (row.outcome !== 'claimed') return { outcome: row.outcome };
      if (given.has(id)) return { outcome: 'busy' };
      given.add(id);
      return {
        outcome: 'claimed',
        context: { ...row, delivery_created_at: createdAt.get(id)! },
        written: writtenOnce(),
      };
    });
  }

  /** The batch with every created_at known; one whose delivery is gone is left out (its claim is `ended`). */
  private async withCreatedAt(batch: ToClaim[]): Promise<{ id: string; createdAt: Date }[]> {
    const unknown = batch.filter((d) => !d.createdAt).map((d) => d.id);
    const found = unknown.length
      ? await queryPrepared<{ id: string; created_at: Date }>(this.dataSource, CREATED_AT_OF, [unknown])
      : [];
    const looked = new Map(found.map((row) => [row.id, row.created_at]));
    return batch.flatMap(({ id, createdAt }) => {
      const at = createdAt ?? looked.get(id);
      return at ? [{ id, createdAt: at }] : [];
    });
  }

  private unlockLate(unlock: () => void): void {
    this.logger.warn(`Requests not written within ${FENCE_MAX_MS} ms of their claim: unlocking their webhooks`);
    unlock();
  }

  /** Releases every lock of the batch (one statement), then the connection; once. */
  private unlocker({ client, release }: PooledConnection): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      queryPreparedOn(client, ATTEMPT_UNLOCK, []).then(release, () => {
        // A connection that cannot unlock is closed (which releases its locks), so the pool drops it.
        void client.end().catch(() => undefined);
        release();
      });
    };
  }
}
