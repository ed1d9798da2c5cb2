import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, IsNull } from 'typeorm';
import { ApiError } from '../core/http/api-error.js';
import { withTimeout } from '../core/with-timeout.js';
import { destinationOf, HostWakes } from '../delivery/host-wakes.js';
import { HostStates } from '../delivery/host-state.js';
import { DeliveryStore } from '../delivery/store/delivery-store.js';
import { OperationalEvents } from '../operational-webhooks/operational-events.js';
import { WebhookEntity } from './webhook.entity.js';
import { serializeWebhookHealth, type HostAdmission, type WebhookHealth } from './webhook.serializer.js';
import { WebhooksService } from './webhooks.service.js';

const HOST_STATE_TIMEOUT_MS = 1_000;

/**
 * Health and pause (DESIGN 7.1). While a webhook is disabled nothing is sent to it: disabling skips its
 * pending deliveries behind the removal fence, a submission records its delivery as `skipped`, and the
 * claim skips any delivery it finds (src/delivery/store).
 * The attempt record keeps the failure streak and disables automatically (ATTEMPT_RECORD). Disabling
 * and enabling are reported to the workspace's operational webhooks (DESIGN 10).
 */
@Injectable()
export class WebhookHealthService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly webhooks: WebhooksService,
    private readonly store: DeliveryStore,
    private readonly hosts: HostStates,
    private readonly events: OperationalEvents,
    private readonly wakes: HostWakes,
  ) {}

  async health(workspaceId: string, id: string): Promise<WebhookHealth> {
    return this.healthOf(await this.webhooks.get(workspaceId, id));
  }

  /**
   * Once this returns no request to the receiver starts; on a disabled webhook it changes nothing
   * (`changed` false, so no audit event and no operational event).
   */
  async disable(workspaceId: string, id: string): Promise<{ health: WebhookHealth; changed: boolean }> {
    const current = await this.webhooks.get(workspaceId, id);
    if (current.disabledAt) return { health: await this.healthOf(current), changed: false };
    // Its webhook.disabled event is written in the same transaction (DESIGN 10).
    const { stopped, events } = await this.dataSource.transaction(async (manager) => {
      const stopped = await this.store.stopWebhook('disable', workspaceId, id, manager); // null: disabled meanwhile
      if (!stopped) return { stopped, events: [] };
      const disabled = await manager.findOneByOrFail(WebhookEntity, { id });
      return { stopped, events: await this.events.write(manager, this.events.webhookDisabled([disabled])) };
    });
    await this.events.wake(events);
    return { health: await this.health(workspaceId, id), changed: stopped !== null };
  }

  /**
   * Sends again from now on, with the failure streak reset; skipped deliveries stay skipped. Enabling a
   * disabled webhook writes its webhook.enabled event in the same transaction (DESIGN 10).
   */
  async enable(workspaceId: string, id: string): Promise<{ health: WebhookHealth; changed: boolean }> {
    const { url } = await this.webhooks.get(workspaceId, id); // 404 for what is not the workspace's webhook
    const { changed, events } = await this.dataSource.transaction(async (manager) => {
      // Locked, so `changed` (the audit's and the event's) is what this update changed.
      const current = await manager.findOne(WebhookEntity, {
        where: { id, workspaceId, removedAt: IsNull() },
        lock: { mode: 'pessimistic_write' },
      });
      if (!current) throw ApiError.notFound(`Webhook ${id} not found`);
      await manager.update(
        WebhookEntity,
        { id },
        { disabledAt: null, disabledReason: null, consecutiveFailures: 0, failingSince: null },
      );
      if (!current.disabledAt) return { changed: false, events: [] };
      return {
        changed: true,
        events: await this.events.write(manager, [this.events.webhookEnabled(current, new Date())]),
      };
    });
    await this.events.wake(events);
    // Nothing of its stays pending while it is disabled; a delivery made meanwhile is woken here anyway.
    if (changed) await this.wakes.wake([{ host: destinationOf(url) }]);
    return { health: await this.health(workspaceId, id), changed };
  }

  private async healthOf(webhook: WebhookEntity): Promise<WebhookHealth> {
    const [pending, host] = await Promise.all([this.store.countPending(webhook.id), this.hostOf(webhook.url)]);
    return serializeWebhookHealth(webhook, pending, host);
  }

  /** The host's admission state; null rather than a health that waits on Redis. */
  private async hostOf(url: string): Promise<HostAdmission | null> {
    return withTimeout(this.hosts.get(destinationOf(url)), HOST_STATE_TIMEOUT_MS).then(
      ({ limit, inFlight, lastChange }) => ({ limit, inFlight, lastChange }),
      () => null,
    );
  }
}
