import type { EntityManager } from 'typeorm';

// Attempts hold this per-webhook lock shared while sending; DELETE takes it exclusive. Unlike row
// locks, advisory locks queue fairly: once DELETE waits, new attempts wait behind it, so removal
// cannot be starved by a steady stream of deliveries, and no attempt starts after it commits.
// An attempt takes it shared in the begin_delivery_attempt database function, which repeats 7270.
const WEBHOOK_LOCK_NAMESPACE = 7270;

/** Blocks until attempts in flight to this webhook are done; held until the transaction ends. */
export async function lockWebhookForRemoval(manager: EntityManager, webhookId: string): Promise<void> {
  await manager.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [WEBHOOK_LOCK_NAMESPACE, webhookId]);
}
