import type { DeliveryStatus } from '../delivery.entity.js';

/**
 * A delivery's lifecycle, stated once; DeliveryStore has one method per transition and takes its
 * `from` statuses from here. "In flight" is a pending delivery with a live lease (`lease_until`), not a
 * status of its own, so a worker that dies mid-attempt only lets its lease run out.
 *
 *   (new) -> pending | skipped             create    a submission's outbox row, or a test event
 *   pending (due) -> picked                pick      a host's drain chooses it (reads only)
 *   pending -> in flight                   claim     a worker leases it for one attempt, once due
 *   in flight, lease run out -> pending    claim     its attempt logged with an unknown outcome, not
 *                                                    counted against the schedule
 *   pending -> cancelled | skipped         claim     its webhook was removed | disabled meanwhile
 *   in flight -> succeeded | failed        record    the attempt's outcome
 *   in flight -> pending                   record    failed, retried at next_attempt_at
 *   in flight -> pending                   release   nothing went out (a kept-alive connection had closed)
 *   pending -> cancelled                   cancel    DELETE /webhooks/{id}
 *   pending -> skipped                     skip      the webhook disabled, by hand or automatically
 *   ended -> pending, pending -> due now   retry     POST .../deliveries/{id}/retry
 *   failed | skipped -> pending            recover   POST /webhooks/{id}/recover
 *   ended -> (dropped)                     expire    retention: its partition, once none of it is pending
 *                                                    or ended within DELIVERY_RETENTION (delivery-partitions.ts)
 */
export const TRANSITIONS = {
  create: { from: [], to: ['pending', 'skipped'] },
  claim: { from: ['pending'], to: ['pending', 'cancelled', 'skipped'] },
  // A delivery cancelled or skipped while its request was out keeps that status unless the attempt ended it.
  record: { from: ['pending', 'cancelled', 'skipped'], to: ['succeeded', 'failed', 'pending'] },
  release: { from: ['pending'], to: ['pending'] },
  cancel: { from: ['pending'], to: ['cancelled'] },
  skip: { from: ['pending'], to: ['skipped'] },
  retry: { from: ['pending', 'succeeded', 'failed', 'skipped'], to: ['pending'] },
  recover: { from: ['failed', 'skipped'], to: ['pending'] },
  expire: { from: ['succeeded', 'failed', 'cancelled', 'skipped'], to: [] },
} as const satisfies Record<string, { from: readonly DeliveryStatus[]; to: readonly DeliveryStatus[] }>;
