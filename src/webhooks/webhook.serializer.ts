import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { RETRY_SCHEDULES, type RetryScheduleName } from '../delivery/retry-schedule.js';
import { maskHeaderValue } from './webhook-headers.js';
import { TRIGGER_TYPES, WEBHOOK_SOURCES } from './webhook-sources.js';
import { DISABLED_REASONS, type DisabledReason, type WebhookEntity } from './webhook.entity.js';

@ApiSchema({ name: 'HostLimitChange' })
export class HostLimitChange {
  @ApiProperty({
    enum: ['growth', 'latency', '429', '503', 'refused', 'reset', 'timeout', 'paused'],
    description:
      'growth (2xx at steady latency), latency (latency well above its recent minimum), 429, 503, refused, reset, timeout (cut at once), paused (circuit breaker)',
  })
  reason: string;

  @ApiProperty({ format: 'date-time' })
  at: string;
}

@ApiSchema({ name: 'HostAdmission' })
export class HostAdmission {
  @ApiProperty({ type: 'integer', minimum: 1, description: 'Attempts allowed in flight to the host now (adaptive)' })
  limit: number;

  @ApiProperty({ type: 'integer', minimum: 0, description: 'Attempts in flight to the host now, from every worker' })
  inFlight: number;

  @ApiProperty({ type: () => HostLimitChange, nullable: true, description: 'The last change of the limit' })
  lastChange: HostLimitChange | null;
}

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

  @ApiProperty({
    type: 'string',
    format: 'date-time',
    nullable: true,
    description: 'Until then attempts are signed with the previous key too (after a rotation); null when none',
  })
  previousKeyExpiresAt: string | null;
}

export const serializeWebhookSecret = (
  w: Pick<WebhookEntity, 'secret' | 'previousSecretExpiresAt'>,
  now = new Date(),
): WebhookSecret => ({
  key: w.secret,
  previousKeyExpiresAt:
    w.previousSecretExpiresAt && w.previousSecretExpiresAt > now ? w.previousSecretExpiresAt.toISOString() : null,
});

const NULLABLE_TIMESTAMP = { type: 'string', format: 'date-time', nullable: true } as const;

/** DESIGN 7.1: whether the webhook sends, and how its attempts have gone. */
@ApiSchema({ name: 'WebhookHealth' })
export class WebhookHealth {
  @ApiProperty()
  webhookId: string;

  @ApiProperty({ enum: ['active', 'disabled'], description: 'Nothing is sent to a disabled webhook' })
  state: 'active' | 'disabled';

  @ApiProperty(NULLABLE_TIMESTAMP)
  disabledAt: string | null;

  @ApiProperty({
    type: 'string',
    enum: [...DISABLED_REASONS],
    nullable: true,
    description: 'manual (POST .../disable), gone (the receiver answered 410), failing (a long failure streak)',
  })
  disabledReason: DisabledReason | null;

  @ApiProperty({ type: 'integer', minimum: 0, description: 'Failed attempts since the last 2xx' })
  consecutiveFailures: number;

  @ApiProperty(NULLABLE_TIMESTAMP)
  lastAttemptAt: string | null;

  @ApiProperty(NULLABLE_TIMESTAMP)
  lastSuccessAt: string | null;

  @ApiProperty({ type: 'string', nullable: true, description: 'Error of the last failed attempt' })
  lastError: string | null;

  @ApiProperty({ type: 'integer', minimum: 0, description: 'Deliveries of the webhook still pending' })
  pendingDeliveries: number;

  @ApiProperty({
    type: () => HostAdmission,
    nullable: true,
    description:
      "Admission at the webhook's host (scheme, host, port), shared with every webhook there; null when Redis did not answer",
  })
  host: HostAdmission | null;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export const serializeWebhookHealth = (
  w: WebhookEntity,
  pendingDeliveries: number,
  host: HostAdmission | null,
): WebhookHealth => ({
  webhookId: w.id,
  state: w.disabledAt ? 'disabled' : 'active',
  disabledAt: iso(w.disabledAt),
  disabledReason: w.disabledReason,
  consecutiveFailures: w.consecutiveFailures,
  lastAttemptAt: iso(w.lastAttemptAt),
  lastSuccessAt: iso(w.lastSuccessAt),
  lastError: w.lastError,
  pendingDeliveries,
  host,
});

/** What a response shows of a webhook: never the secret. */
export type ListedWebhook = Pick<
  WebhookEntity,
  'id' | 'name' | 'createdAt' | 'updatedAt' | 'url' | 'source' | 'workspaceId'
>;

/** A webhook's listed fields as the removal fence returns them (WEBHOOKS_LIST formats its timestamps). */
export interface ListedWebhookRow {
  id: string;
  workspace_id: string;
  name: string;
  url: string;
  source: string;
  created_at: Date;
  updated_at: Date;
}

export const listedWebhookOf = (r: ListedWebhookRow): ListedWebhook => ({
  id: r.id,
  workspaceId: r.workspace_id,
  name: r.name,
  url: r.url,
  source: r.source,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

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

/** A row of WEBHOOKS_LIST: a webhook's listed fields, timestamps formatted, with its calculators and triggers. */
export interface WebhookListRow extends Omit<ListedWebhookRow, 'created_at' | 'updated_at'> {
  created_at: string;
  updated_at: string;
  calculators: { id: string; name: string }[];
  triggers: string[];
}

/** Spec 2.3: the seven fields of 2.1 (as serializeWebhook) and the webhook's calculators and triggers. */
export const serializeWebhookListItem = (r: WebhookListRow): WebhookListItem => ({
  id: r.id,
  name: r.name,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  url: r.url,
  source: r.source,
  workspaceId: r.workspace_id,
  calculators: r.calculators,
  triggers: r.triggers.map((type) => ({ type, webhookId: r.id })),
});

/** The service's defaults a webhook without a setting of its own follows. */
export interface SettingsDefaults {
  timeoutMs: number;
  /** 0: no cap. */
  maxInFlight: number;
}

/** DESIGN 11: what a webhook's filter did with the submissions to its calculators since it was set. */
@ApiSchema({ name: 'FilterCounts' })
export class FilterCounts {
  @ApiProperty({ format: 'date-time', description: 'When the filter was set' })
  since: string;

  @ApiProperty({ type: 'integer', minimum: 0, description: 'Submissions that matched: each made a delivery' })
  passed: number;

  @ApiProperty({ type: 'integer', minimum: 0, description: 'Submissions that did not match (or errored): none made' })
  heldBack: number;
}

/** DESIGN 10: a webhook's settings as they apply now; header values masked. */
@ApiSchema({ name: 'WebhookSettings' })
export class WebhookSettings {
  @ApiProperty({ description: 'Webhook identifier' })
  id: string;

  @ApiProperty()
  name: string;

  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'string' },
    description:
      'Custom request headers by lower-case name; each value masked: its first 4 characters and "…" when it ' +
      'has 16 or more, else "••••"',
    example: { authorization: 'Bear…' },
  })
  headers: Record<string, string>;

  @ApiProperty({
    type: 'integer',
    minimum: 1,
    description: "An attempt's time limit in ms: the webhook's own, else the service default (DELIVERY_TIMEOUT_MS)",
  })
  timeoutMs: number;

  @ApiProperty({
    type: 'integer',
    minimum: 1,
    nullable: true,
    description:
      "Attempts in flight at once: the webhook's own, else the service default " +
      '(DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK); null when neither sets a cap',
  })
  maxInFlight: number | null;

  @ApiProperty({ enum: RETRY_SCHEDULES, description: 'standard, short (5 attempts within an hour) or none' })
  retrySchedule: RetryScheduleName;

  @ApiProperty({
    type: 'string',
    nullable: true,
    description: 'The SQL/JSON path predicate a submission must match to be sent here, as given; null: none',
  })
  filter: string | null;

  @ApiProperty({
    type: () => FilterCounts,
    nullable: true,
    description: 'What the filter did since it was set; null without a filter',
  })
  filterCounts: FilterCounts | null;

  @ApiProperty({
    type: 'object',
    properties: {
      timeoutMs: { type: 'boolean' },
      maxInFlight: { type: 'boolean' },
    },
    required: ['timeoutMs', 'maxInFlight'],
    description: 'Which of timeoutMs and maxInFlight are the service defaults (the webhook has none of its own)',
  })
  defaults: { timeoutMs: boolean; maxInFlight: boolean };
}

/** The counts of the webhook's filter (its version's counter rows summed); absent without a filter. */
interface FilterTotals {
  passed: number;
  heldBack: number;
}

export const serializeWebhookSettings = (
  w: Pick<
    WebhookEntity,
    'id' | 'name' | 'headers' | 'timeoutMs' | 'maxInFlight' | 'retrySchedule' | 'filter' | 'filterSetAt'
  >,
  defaults: SettingsDefaults,
  totals: FilterTotals | null,
): WebhookSettings => ({
  id: w.id,
  name: w.name,
  headers: Object.fromEntries(Object.entries(w.headers).map(([name, value]) => [name, maskHeaderValue(value)])),
  timeoutMs: w.timeoutMs ?? defaults.timeoutMs,
  maxInFlight: w.maxInFlight ?? (defaults.maxInFlight || null),
  retrySchedule: w.retrySchedule,
  filter: w.filter,
  filterCounts: w.filter !== null && w.filterSetAt && totals ? { since: w.filterSetAt.toISOString(), ...totals } : null,
  defaults: { timeoutMs: w.timeoutMs === null, maxInFlight: w.maxInFlight === null },
});
