import type { DisabledReason } from '../webhooks/webhook.entity.js';

/*
 * The events an operational webhook receives (DESIGN 10) and the body each is sent as. Free of
 * @nestjs/swagger (the worker builds these); their schemas are operational-event.response.ts.
 */

export const OPERATIONAL_EVENT_TYPES = [
  'webhook.disabled',
  'webhook.enabled',
  'delivery.failed',
  'recovery.completed',
] as const;
export type OperationalEventType = (typeof OPERATIONAL_EVENT_TYPES)[number];

/** The webhook an event is about, as its receiver needs to name it. */
export interface EventWebhook {
  id: string;
  name: string;
  url: string;
}

export interface AttemptSummary {
  attemptNumber: number;
  startedAt: string;
  durationMs: number;
  statusCode: number | null;
  responseBody: string | null;
  error: string | null;
}

export interface OperationalEventData {
  'webhook.disabled': { webhook: EventWebhook; reason: DisabledReason; lastError: string | null; disabledAt: string };
  'webhook.enabled': { webhook: EventWebhook; enabledAt: string };
  'delivery.failed': {
    deliveryId: string;
    webhook: EventWebhook;
    lastAttempt: AttemptSummary | null;
    /** The body the webhook was sent (DESIGN 5). */
    payload: unknown;
  };
  'recovery.completed': {
    recoveryId: string;
    webhookId: string;
    since: string;
    until: string;
    matched: number;
    requeued: number;
    completedAt: string;
  };
}

/** The body POSTed to an operational webhook's url. */
export interface OperationalEvent<T extends OperationalEventType = OperationalEventType> {
  type: T;
  timestamp: string;
  data: OperationalEventData[T];
}

/** An event to send to the workspace's operational webhooks subscribed to its type. */
export interface WorkspaceEvent {
  workspaceId: string;
  event: OperationalEvent;
}

export const operationalEvent = <T extends OperationalEventType>(
  workspaceId: string,
  type: T,
  data: OperationalEventData[T],
): WorkspaceEvent => ({ workspaceId, event: { type, timestamp: new Date().toISOString(), data } as OperationalEvent });
