import type { DataSource } from 'typeorm';
import { queryPrepared } from '../core/database/prepared.js';
import { WEBHOOK_DISABLE, WEBHOOK_REMOVE } from '../core/database/statements.js';
import type { DeliveryJobs } from '../delivery/delivery-queue.js';
import { listedWebhookOf, type ListedWebhook, type ListedWebhookRow } from './webhook.serializer.js';

// Attempts hold this per-webhook lock shared while sending; DELETE and disable take it exclusive. Unlike
// row locks, advisory locks queue fairly: once DELETE waits, new attempts wait behind it, so removal
// cannot be starved by a steady stream of deliveries, and no attempt starts after it commits.

interface StopRow extends ListedWebhookRow {
  ended: DeliveryJobs[];
}

/**
 * The fence of DELETE (`remove`) and disable, in one statement (WEBHOOK_REMOVE, WEBHOOK_DISABLE): waits
 * for attempts in flight to this webhook and holds off new ones, applies the change and ends its pending
 * deliveries. Returns the webhook as it was and the ended deliveries, whose queue jobs the caller
 * removes; null when the workspace has no such webhook (removed, or for disable already disabled).
 */
export async function stopWebhook(
  dataSource: DataSource,
  change: 'remove' | 'disable',
  workspaceId: string,
  id: string,
): Promise<{ webhook: ListedWebhook; ended: DeliveryJobs[] } | null> {
  const statement = change === 'remove' ? WEBHOOK_REMOVE : WEBHOOK_DISABLE;
  const [row] = await queryPrepared<StopRow>(dataSource, statement, [id, workspaceId, new Date()]);
  if (!row) return null;
  return { webhook: listedWebhookOf(row), ended: row.ended };
}
