import { Inject, Injectable } from '@nestjs/common';
import type { AppConfig } from '../../../core/config/config.js';
import { APP_CONFIG } from '../../../core/config/config.module.js';
import type { DeliverJobData } from '../../delivery-queue.js';

// Webhooks this worker remembers; past that the least recently claimed is forgotten (its job's cap then serves).
const MAX_KNOWN = 10_000;

/**
 * Each webhook's in-flight cap (DESIGN 10 `maxInFlight`, else DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK) as this
 * worker knows it. Admission runs before the claim that reads the webhook, so an attempt is admitted under
 * the newer of what the webhook's last claim here read and what its job carries (read when it was
 * enqueued), else the default: a PATCH reaches each worker with the first attempt of the webhook it claims
 * or takes from a submission after it, without a read of its own per attempt.
 */
@Injectable()
export class WebhookCaps {
  /** webhook id -> its own cap (null: none) and when read; a Map keeps insertion order, the oldest first. */
  private readonly known = new Map<string, { cap: number | null; at: number }>();
  private readonly defaultCap: number;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.defaultCap = config.maxInFlightPerWebhook;
  }

  /** The cap admission applies to an attempt of the job, enqueued at `enqueuedAt` (ms); 0: none. */
  capOf({ webhookId, maxInFlight }: Pick<DeliverJobData, 'webhookId' | 'maxInFlight'>, enqueuedAt: number): number {
    const claimed = this.known.get(webhookId);
    const own = claimed && (maxInFlight === undefined || claimed.at >= enqueuedAt) ? claimed.cap : maxInFlight;
    return own ?? this.defaultCap;
  }

  /** What a claim read of the webhook. */
  learn(webhookId: string, maxInFlight: number | null): void {
    this.known.delete(webhookId);
    this.known.set(webhookId, { cap: maxInFlight, at: Date.now() });
    if (this.known.size > MAX_KNOWN) this.known.delete(this.known.keys().next().value!);
  }
}
