import { Inject, Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, In, IsNull, Not, type EntityManager } from 'typeorm';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { storedPayload } from '../delivery/delivery-payload.js';
import { HostWakes } from '../delivery/host-wakes.js';
import { maxAttemptsFor } from '../delivery/retry-schedule.js';
import { DeliveryStore, type EndedDelivery, type FailedDelivery } from '../delivery/store/delivery-store.js';
import { WebhookEntity } from '../webhooks/webhook.entity.js';
import { operationalEvent, type EventWebhook, type WorkspaceEvent } from './operational-event.js';

/**
 * Emits operational events (DESIGN 10) as deliveries of the same engine: one per subscribed operational
 * webhook, carrying the event, then delivered like any other. Where the change has a transaction the
 * deliveries are written in it (`write`, an outbox: disable, enable, a recovery's completion); the
 * attempt record's changes (a webhook disabled by the health rules, a delivery failed) are one batched
 * statement of the worker's hot path, so their events are written right after it (`emitAfter`), in the
 * background: never failing the record, never holding it.
 */
@Injectable()
export class OperationalEvents implements BeforeApplicationShutdown {
  private readonly logger = new Logger('OperationalEvents');
  private readonly maxAttempts: number;
  private readonly emitting = new Set<Promise<void>>();

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly store: DeliveryStore,
    private readonly wakes: HostWakes,
  ) {
    this.maxAttempts = maxAttemptsFor(config.retryScheduleMs);
  }

  /** In the change's transaction; returns the receivers' hosts, which the caller wakes once it has committed. */
  write(manager: EntityManager, events: WorkspaceEvent[]): Promise<string[]> {
    return this.store.createEvents(manager, events, this.maxAttempts);
  }

  /** After the change's commit; a wake Redis does not take now is the sweeper's to make (HostWakes). */
  wake(hosts: string[]): Promise<void> {
    return this.wakes.wake(hosts.map((host) => ({ host })));
  }

  /** After a change that had no transaction of its own to join: written and queued in the background. */
  private emitAfter(events: () => Promise<WorkspaceEvent[]>, about: string): void {
    const emitting = events()
      .then((built) => this.dataSource.transaction((manager) => this.write(manager, built)))
      .then((hosts) => this.wake(hosts))
      .catch((error: unknown) =>
        this.logger.warn({ msg: 'operational event not emitted', about, error: (error as Error).message }),
      )
      .finally(() => this.emitting.delete(emitting));
    this.emitting.add(emitting);
  }

  /** webhook.disabled, right after the attempt record disabled webhooks by the health rules (DESIGN 7.1). */
  afterWebhooksDisabled(webhookIds: string[]): void {
    if (webhookIds.length > 0) this.emitAfter(() => this.webhooksDisabled(webhookIds), 'webhook.disabled');
  }

  /** delivery.failed, right after attempts were recorded, for those of `deliveries` that ended failed. */
  afterDeliveriesEnded(deliveries: EndedDelivery[]): void {
    if (deliveries.length > 0) this.emitAfter(() => this.deliveriesFailed(deliveries), 'delivery.failed');
  }

  private async webhooksDisabled(webhookIds: string[]): Promise<WorkspaceEvent[]> {
    const webhooks = await this.dataSource
      .getRepository(WebhookEntity)
      .findBy({ id: In(webhookIds), kind: 'webhook', disabledAt: Not(IsNull()) });
    return this.webhookDisabled(webhooks);
  }

  /** webhook.disabled for these webhooks, as they are once disabled. */
  webhookDisabled(webhooks: WebhookEntity[]): WorkspaceEvent[] {
    return webhooks.map((w) =>
      operationalEvent(w.workspaceId, 'webhook.disabled', {
        webhook: eventWebhook(w),
        reason: w.disabledReason ?? 'manual',
        lastError: w.lastError,
        disabledAt: (w.disabledAt ?? new Date()).toISOString(),
      }),
    );
  }

  webhookEnabled(webhook: WebhookEntity, enabledAt: Date): WorkspaceEvent {
    return operationalEvent(webhook.workspaceId, 'webhook.enabled', {
      webhook: eventWebhook(webhook),
      enabledAt: enabledAt.toISOString(),
    });
  }

  /** Failed: the schedule exhausted, a 410, or a refusal by the SSRF guard. */
  private async deliveriesFailed(deliveries: EndedDelivery[]): Promise<WorkspaceEvent[]> {
    const failed = await this.store.failedDeliveries(deliveries);
    return failed.map((d) =>
      operationalEvent(d.workspaceId, 'delivery.failed', {
        deliveryId: d.id,
        webhook: { id: d.webhookId, name: d.webhookName, url: d.webhookUrl },
        lastAttempt: lastAttemptOf(d),
        payload: storedPayload(d.webhookId, submissionOf(d), d.testSubmission),
      }),
    );
  }

  /** Lets events still being written finish before the connections close. */
  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all([...this.emitting]);
  }
}

const eventWebhook = (w: Pick<WebhookEntity, 'id' | 'name' | 'url'>): EventWebhook => ({
  id: w.id,
  name: w.name,
  url: w.url,
});

const lastAttemptOf = (d: FailedDelivery) =>
  d.attemptNumber === null
    ? null
    : {
        attemptNumber: d.attemptNumber,
        startedAt: d.startedAt.toISOString(),
        durationMs: d.durationMs,
        statusCode: d.statusCode,
        responseBody: d.responseBody,
        error: d.error,
      };

/** The stored submission's columns, when the delivery has one (a test delivery has its sample instead). */
const submissionOf = (d: FailedDelivery) =>
  d.submissionId === null
    ? null
    : {
        id: d.submissionId,
        calculatorId: d.calculatorId,
        finished: d.finished,
        data: d.data,
        meta: d.meta,
        createdAt: d.createdAt,
        updatedAt: d.updatedAt,
      };
