import type { EntityManager } from 'typeorm';
import { WEBHOOK_REMOVAL_LOCK } from '../core/database/statements.js';
import { ApiError } from '../core/http/api-error.js';
import type { DeliveryJobs } from '../delivery/delivery-queue.js';
import { DeliveryEntity } from '../delivery/delivery.entity.js';
import { WebhookEntity } from './webhook.entity.js';

// Attempts hold this per-webhook lock shared while sending; DELETE and disable take it exclusive. Unlike
// row locks, advisory locks queue fairly: once DELETE waits, new attempts wait behind it, so removal
// cannot be starved by a steady stream of deliveries, and no attempt starts after it commits.

/**
 * The fence of DELETE and disable, in the caller's transaction: waits for attempts in flight to this
 * webhook and holds off new ones (the claim re-reads the webhook after the lock), locks its row, applies
 * `changes` to it and ends its pending deliveries as `ended`. Returns the webhook as it was and the
 * ended deliveries, whose queue jobs the caller removes once committed. The webhook row is locked before
 * its deliveries, in the order the attempt record takes them (ATTEMPT_RECORD), so the two cannot deadlock.
 */
export async function stopWebhook(
  manager: EntityManager,
  workspaceId: string,
  id: string,
  changes: Partial<WebhookEntity>,
  ended: 'cancelled' | 'skipped',
): Promise<{ webhook: WebhookEntity; ended: DeliveryJobs[] }> {
  await manager.query(WEBHOOK_REMOVAL_LOCK, [id]);
  const webhook = await manager
    .createQueryBuilder(WebhookEntity, 'w')
    .setLock('pessimistic_write')
    .where('w.id = :id AND w.workspace_id = :workspaceId AND w.removed_at IS NULL', { id, workspaceId })
    .getOne();
  if (!webhook) throw ApiError.notFound(`Webhook ${id} not found`);
  const now = new Date();
  await manager.update(WebhookEntity, { id }, changes);
  const result = await manager
    .createQueryBuilder()
    .update(DeliveryEntity)
    .set({ status: ended, nextAttemptAt: null, completedAt: now, updatedAt: now })
    .where({ webhookId: id, status: 'pending' })
    .returning('id, max_attempts')
    .execute();
  const rows = result.raw as { id: string; max_attempts: number }[];
  return { webhook, ended: rows.map((d) => ({ deliveryId: d.id, maxAttempts: d.max_attempts })) };
}
