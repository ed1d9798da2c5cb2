import type { EntityManager, QueryRunner } from 'typeorm';
import { prepared, queryPreparedOn } from '../core/database/prepared.js';

// Attempts hold this per-webhook lock shared while sending; DELETE takes it exclusive. Unlike row
// locks, advisory locks queue fairly: once DELETE waits, new attempts wait behind it, so removal
// cannot be starved by a steady stream of deliveries, and no attempt starts after it commits.
const WEBHOOK_LOCK_NAMESPACE = 7270;

/** Blocks until attempts in flight to this webhook are done; held until the transaction ends. */
export async function lockWebhookForRemoval(manager: EntityManager, webhookId: string): Promise<void> {
  await manager.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [WEBHOOK_LOCK_NAMESPACE, webhookId]);
}

const LOCK_WEBHOOK_OF_DELIVERY = prepared(
  'webhook_lock_of_delivery',
  `SELECT pg_advisory_xact_lock_shared(${WEBHOOK_LOCK_NAMESPACE}, hashtext(webhook_id)) FROM deliveries WHERE id = $1`,
);

/** Shared lock on the webhook of a delivery, for one attempt; false when the delivery is unknown. */
export async function lockWebhookOfDelivery(runner: QueryRunner, deliveryId: string): Promise<boolean> {
  const rows = await queryPreparedOn(runner, LOCK_WEBHOOK_OF_DELIVERY, [deliveryId]);
  return rows.length > 0;
}
