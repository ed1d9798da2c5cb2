import type { EntityManager } from 'typeorm';
import { WEBHOOK_REMOVAL_LOCK } from '../core/database/statements.js';

// Attempts hold this per-webhook lock shared while sending; DELETE takes it exclusive. Unlike row
// locks, advisory locks queue fairly: once DELETE waits, new attempts wait behind it, so removal
// cannot be starved by a steady stream of deliveries, and no attempt starts after it commits.

/** Blocks until attempts in flight to this webhook are done; held until the transaction ends. */
export async function lockWebhookForRemoval(manager: EntityManager, webhookId: string): Promise<void> {
  await manager.query(WEBHOOK_REMOVAL_LOCK, [webhookId]);
}
