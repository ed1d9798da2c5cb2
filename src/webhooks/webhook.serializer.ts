import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { TRIGGER_TYPES, WEBHOOK_SOURCES } from './webhook-sources.js';
import type { WebhookEntity } from './webhook.entity.js';

/** Spec 2.1; the classes below are the response types and their OpenAPI schemas. */
@ApiSchema({ name: 'Webhook' })
export class WebhookResponse {
  @ApiProperty({ description: 'Webhook identifier (CUID2)', example: 'k3x9m2q8w7e4r5t6y1u0i9o8' })
  id: string;

  @ApiProperty({ description: 'Name given at registration ("" when none was)', example: 'CRM sync' })
  name: string;

  @ApiProperty({ format: 'date-time', description: 'ISO 8601 UTC, with milliseconds' })
  createdAt: string;

  @ApiProperty({ format: 'date-time', description: 'ISO 8601 UTC, with milliseconds' })
  updatedAt: string;

  @ApiProperty({ description: 'Destination the webhook sends data to', example: 'https://example.com/hooks/calc' })
  url: string;

  @ApiProperty({ enum: WEBHOOK_SOURCES, description: 'Canonical source value (spec 2.2)' })
  source: string;

  @ApiProperty({ description: 'Owning workspace identifier' })
  workspaceId: string;
}

@ApiSchema({ name: 'WebhookCalculator' })
export class WebhookCalculator {
  @ApiProperty({ description: 'Calculator identifier' })
  id: string;

  @ApiProperty()
  name: string;
}

@ApiSchema({ name: 'WebhookTrigger' })
export class WebhookTrigger {
  @ApiProperty({ enum: TRIGGER_TYPES })
  type: string;

  @ApiProperty({ description: "The owning webhook's id" })
  webhookId: string;
}

/** Spec 2.3: the seven fields plus the bound calculators and triggers. */
@ApiSchema({ name: 'WebhookListItem' })
export class WebhookListItem extends WebhookResponse {
  @ApiProperty({ type: [WebhookCalculator] })
  calculators: WebhookCalculator[];

  @ApiProperty({ type: [WebhookTrigger] })
  triggers: WebhookTrigger[];
}

@ApiSchema({ name: 'WebhookSecret' })
export class WebhookSecret {
  @ApiProperty({ description: 'Signing secret of the webhook', example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' })
  key: string;
}

/** What a response shows of a webhook: never the secret. */
type ListedWebhook = Pick<WebhookEntity, 'id' | 'name' | 'createdAt' | 'updatedAt' | 'url' | 'source' | 'workspaceId'>;

/** Exactly the seven fields of spec 2.1; the secret never leaves through here. */
export const serializeWebhook = (w: ListedWebhook): WebhookResponse => ({
  id: w.id,
  name: w.name,
  createdAt: w.createdAt.toISOString(),
  updatedAt: w.updatedAt.toISOString(),
  url: w.url,
  source: w.source,
  workspaceId: w.workspaceId,
});

export const serializeWebhookListItem = (
  w: ListedWebhook,
  calculators: { id: string; name: string }[],
  triggers: string[],
): WebhookListItem => ({
  ...serializeWebhook(w),
  calculators,
  triggers: triggers.map((type) => ({ type, webhookId: w.id })),
});
