import { Check, Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { CalculatorEntity } from '../calculators/calculator.entity.js';
import { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import type { RetryScheduleName } from '../delivery/retry-schedule.js';

export const DISABLED_REASONS = ['manual', 'gone', 'failing'] as const;
export type DisabledReason = (typeof DISABLED_REASONS)[number];

/** `operational`: a workspace's receiver of operational events (src/operational-webhooks), never a spec webhook. */
export const WEBHOOK_KINDS = ['webhook', 'operational'] as const;
export type WebhookKind = (typeof WEBHOOK_KINDS)[number];

@Entity('webhooks')
@Check('webhooks_disabled_reason_check', `disabled_reason IN ('manual', 'gone', 'failing')`)
@Check('webhooks_timeout_ms_check', `timeout_ms BETWEEN 1000 AND 30000`)
@Check('webhooks_max_in_flight_check', `max_in_flight BETWEEN 1 AND 100`)
@Check('webhooks_retry_schedule_check', `retry_schedule IN ('standard', 'short', 'none')`)
@Check('webhooks_kind_check', `kind IN ('webhook', 'operational')`)
@Index('webhooks_workspace_active_idx', ['workspaceId', 'createdAt', 'id'], { where: 'removed_at IS NULL' })
export class WebhookEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  id: string;

  @ForeignKey(() => WorkspaceEntity, { name: 'webhooks_workspace_id_fkey', onDelete: 'CASCADE' })
  @Column({ name: 'workspace_id', type: 'varchar', length: 32 })
  workspaceId: string;

  @Column({ type: 'varchar', length: 255, default: '' })
  name: string;

  @Column({ type: 'varchar', length: 2048 })
  url: string;

  @Column({ type: 'varchar', length: 32, default: 'user' })
  source: string;

  /** The spec's endpoints know only `webhook`s; an `operational` one has events as triggers and no calculators. */
  @Column({ type: 'varchar', length: 16, default: 'webhook' })
  kind: WebhookKind;

  /** Standard Webhooks signing secret (`whsec_...`); only ever shown by GET /webhooks/{id}/secret. */
  @Column({ type: 'varchar', length: 128 })
  secret: string;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3, default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3, default: () => 'now()' })
  updatedAt: Date;

  @Column({ name: 'removed_at', type: 'timestamptz', precision: 3, nullable: true })
  removedAt: Date | null;

  // --- Health and pause (DESIGN 7.1) ---

  /** Set while the webhook is disabled: nothing is sent, new deliveries are recorded `skipped`. */
  @Column({ name: 'disabled_at', type: 'timestamptz', precision: 3, nullable: true })
  disabledAt: Date | null;

  @Column({ name: 'disabled_reason', type: 'varchar', length: 16, nullable: true })
  disabledReason: DisabledReason | null;

  /** Failed attempts since the last 2xx. */
  @Column({ name: 'consecutive_failures', type: 'integer', default: 0 })
  consecutiveFailures: number;

  /** When the current failure streak's first failure happened; null while not failing. */
  @Column({ name: 'failing_since', type: 'timestamptz', precision: 3, nullable: true })
  failingSince: Date | null;

  @Column({ name: 'last_attempt_at', type: 'timestamptz', precision: 3, nullable: true })
  lastAttemptAt: Date | null;

  @Column({ name: 'last_success_at', type: 'timestamptz', precision: 3, nullable: true })
  lastSuccessAt: Date | null;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError: string | null;

  // --- Secret rotation (DESIGN 7.5) ---

  /** The secret before the last rotation; attempts are signed with it too until it expires. */
  @Column({ name: 'previous_secret', type: 'varchar', length: 128, nullable: true })
  previousSecret: string | null;

  @Column({ name: 'previous_secret_expires_at', type: 'timestamptz', precision: 3, nullable: true })
  previousSecretExpiresAt: Date | null;

  // --- Settings (DESIGN 10, webhook-settings.ts) ---

  /** Custom request headers, lower-case name -> value as given; values are secrets (never shown or logged). */
  @Column({ type: 'jsonb', default: () => "'{}'" })
  headers: Record<string, string>;

  /** Null: DELIVERY_TIMEOUT_MS. */
  @Column({ name: 'timeout_ms', type: 'integer', nullable: true })
  timeoutMs: number | null;

  /** Null: DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK. */
  @Column({ name: 'max_in_flight', type: 'integer', nullable: true })
  maxInFlight: number | null;

  @Column({ name: 'retry_schedule', type: 'varchar', length: 16, default: 'standard' })
  retrySchedule: RetryScheduleName;

  // --- Filter (DESIGN 11, submission-filter.ts) ---

  /** An SQL/JSON path predicate over the Submission, as given; null: every submission is sent. */
  @Column({ type: 'varchar', length: 1000, nullable: true })
  filter: string | null;

  /** Names the filter its counts belong to (webhook_filter_counters); bumped whenever the filter changes. */
  @Column({ name: 'filter_version', type: 'integer', default: 0 })
  filterVersion: number;

  @Column({ name: 'filter_set_at', type: 'timestamptz', precision: 3, nullable: true })
  filterSetAt: Date | null;
}

@Entity('webhook_calculators')
@Index('webhook_calculators_calculator_idx', ['calculatorId', 'webhookId'])
export class WebhookCalculatorEntity {
  @ForeignKey(() => WebhookEntity, { name: 'webhook_calculators_webhook_id_fkey', onDelete: 'CASCADE' })
  @PrimaryColumn({ name: 'webhook_id', type: 'varchar', length: 32 })
  webhookId: string;

  @ForeignKey(() => CalculatorEntity, { name: 'webhook_calculators_calculator_id_fkey', onDelete: 'CASCADE' })
  @PrimaryColumn({ name: 'calculator_id', type: 'varchar', length: 32 })
  calculatorId: string;
}

@Entity('webhook_triggers')
export class WebhookTriggerEntity {
  @ForeignKey(() => WebhookEntity, { name: 'webhook_triggers_webhook_id_fkey', onDelete: 'CASCADE' })
  @PrimaryColumn({ name: 'webhook_id', type: 'varchar', length: 32 })
  webhookId: string;

  @PrimaryColumn({ type: 'varchar', length: 32 })
  type: string;
}
