import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Batcher } from '../../core/batcher.js';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { connectionOf, queryPreparedOn, type PooledConnection } from '../../core/database/prepared.js';
import { ATTEMPT_CLAIM, ATTEMPT_UNLOCK } from './delivery-statements.js';

export interface AttemptContext {
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

type ClaimRow = AttemptContext & {
  delivery_id: string;
  outcome: 'claimed' | 'cancelled' | 'skipped' | 'busy' | 'ended';
};

// A request is handed to its socket within a tick of its claim; this bound only guards against a bug.
const FENCE_MAX_MS = 5_000;
const MAX_BATCH = 200;
const MAX_CONCURRENT = 2;

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
  private readonly batcher: Batcher<string, Claim>;
  private readonly leaseMs: number;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    // Two claims at once (fewer with a pool under 4, so records, the sweeper and the rest keep half of it):
    // one may wait for a webhook's lock while the other goes on; more only split the same claims into
    // smaller batches (SCALING.md).
    const concurrent = Math.max(1, Math.min(MAX_CONCURRENT, Math.floor(config.databasePoolSize / 2)));
    this.batcher = new Batcher((ids) => this.claimBatch(ids), concurrent, MAX_BATCH);
    this.leaseMs = config.deliveryTimeoutMs * 2 + 10_000;
  }

  claim(deliveryId: string): Promise<Claim> {
    return this.batcher.add(deliveryId);
  }

  private async claimBatch(ids: string[]): Promise<Claim[]> {
    const connection = await connectionOf(this.dataSource);
    let rows: ClaimRow[];
    try {
      rows = await queryPreparedOn<ClaimRow>(connection.client, ATTEMPT_CLAIM, [ids, this.leaseMs]);
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
    return ids.map((id): Claim => {
      const row = byId.get(id);
      if (!row) return { outcome: 'ended' };
      if (row.outcome !== 'claimed') return { outcome: row.outcome };
      if (given.has(id)) return { outcome: 'busy' };
      given.add(id);
      return { outcome: 'claimed', context: row, written: writtenOnce() };
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
