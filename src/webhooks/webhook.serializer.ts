import type { WebhookEntity } from './webhook.entity.js';

export interface WebhookResponse {
  id: string;
  name: string;
  createdAt: string;
  updatedAt: string;
  url: string;
  source: string;
  workspaceId: string;
}

export interface WebhookListItem extends WebhookResponse {
  calculators: { id: string; name: string }[];
  triggers: { type: string; webhookId: string }[];
}

/** Exactly the seven fields of spec 2.1; the secret never leaves through here. */
export const serializeWebhook = (w: WebhookEntity): WebhookResponse => ({
  id: w.id,
  name: w.name,
  createdAt: w.createdAt.toISOString(),
  updatedAt: w.updatedAt.toISOString(),
  url: w.url,
  source: w.source,
  workspaceId: w.workspaceId,
});

export const serializeWebhookListItem = (
  w: WebhookEntity,
  calculators: { id: string; name: string }[],
  triggers: string[],
): WebhookListItem => ({
  ...serializeWebhook(w),
  calculators,
  triggers: triggers.map((type) => ({ type, webhookId: w.id })),
});
