import type { DeliveryAttemptEntity, DeliveryEntity } from './delivery.entity.js';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export const serializeDelivery = (d: DeliveryEntity) => ({
  id: d.id,
  webhookId: d.webhookId,
  submissionId: d.submissionId,
  event: 'newSubmission',
  status: d.status,
  attemptCount: d.attemptCount,
  maxAttempts: d.maxAttempts,
  nextAttemptAt: iso(d.nextAttemptAt),
  lastAttemptAt: iso(d.lastAttemptAt),
  lastStatusCode: d.lastStatusCode,
  lastError: d.lastError,
  createdAt: d.createdAt.toISOString(),
  updatedAt: d.updatedAt.toISOString(),
  completedAt: iso(d.completedAt),
});

export const serializeAttempt = (a: DeliveryAttemptEntity) => ({
  attemptNumber: a.attemptNumber,
  trigger: a.trigger,
  startedAt: a.startedAt.toISOString(),
  durationMs: a.durationMs,
  statusCode: a.statusCode,
  succeeded: a.succeeded,
  responseBody: a.responseBody,
  error: a.error,
});

export type DeliveryResponse = ReturnType<typeof serializeDelivery>;
export type DeliveryDetailResponse = DeliveryResponse & {
  payload: unknown;
  attempts: ReturnType<typeof serializeAttempt>[];
};
