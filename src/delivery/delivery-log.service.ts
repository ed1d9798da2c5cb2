import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ApiError } from '../core/http/api-error.js';
import { isCuid2 } from '../core/ids.js';
import { SubmissionEntity } from '../submissions/submission.entity.js';
import { WebhooksService } from '../webhooks/webhooks.service.js';
import { buildPayload } from './delivery-payload.js';
import { DeliveryQueue, manualJobId } from './delivery-queue.js';
import { DeliveryAttemptEntity, DeliveryEntity, DELIVERY_STATUSES, type DeliveryStatus } from './delivery.entity.js';

export interface DeliveryFilter {
  status?: DeliveryStatus;
  limit: number;
  offset: number;
}

export function parseStatusFilter(raw: unknown): DeliveryStatus | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !(DELIVERY_STATUSES as readonly string[]).includes(raw)) {
    throw ApiError.invalidField('status', `must be one of: ${DELIVERY_STATUSES.join(', ')}`);
  }
  return raw as DeliveryStatus;
}

/** The delivery log of a webhook of the caller's workspace, and manual redelivery. */
@Injectable()
export class DeliveryLogService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly webhooks: WebhooksService,
    private readonly queue: DeliveryQueue,
  ) {}

  async list(workspaceId: string, webhookId: string, filter: DeliveryFilter): Promise<DeliveryEntity[]> {
    await this.webhooks.get(workspaceId, webhookId);
    return this.dataSource.getRepository(DeliveryEntity).find({
      where: { webhookId, workspaceId, ...(filter.status ? { status: filter.status } : {}) },
      order: { createdAt: 'DESC', id: 'DESC' },
      take: filter.limit,
      skip: filter.offset,
    });
  }

  async get(
    workspaceId: string,
    webhookId: string,
    deliveryId: string,
  ): Promise<{ delivery: DeliveryEntity; attempts: DeliveryAttemptEntity[]; payload: unknown }> {
    await this.webhooks.get(workspaceId, webhookId);
    const delivery = await this.findDelivery(workspaceId, webhookId, deliveryId);
    const [attempts, submission] = await Promise.all([
      this.dataSource
        .getRepository(DeliveryAttemptEntity)
        .find({ where: { deliveryId }, order: { attemptNumber: 'ASC', startedAt: 'ASC' } }),
      this.dataSource.getRepository(SubmissionEntity).findOneByOrFail({ id: delivery.submissionId }),
    ]);
    return { delivery, attempts, payload: buildPayload(webhookId, submission) };
  }

  /** Sends an ended delivery once more, now, with the same webhook-id; 400 while it is pending. */
  async retry(workspaceId: string, webhookId: string, deliveryId: string): Promise<DeliveryEntity> {
    const webhook = await this.webhooks.get(workspaceId, webhookId);
    const delivery = await this.findDelivery(workspaceId, webhookId, deliveryId);
    if (delivery.status === 'pending') {
      throw ApiError.invalidField('status', 'the delivery is still pending; retry it once it has ended');
    }
    const now = new Date();
    const updated = await this.dataSource
      .getRepository(DeliveryEntity)
      .createQueryBuilder()
      .update()
      .set({
        status: 'pending',
        maxAttempts: () => 'attempt_count + 1',
        nextAttemptAt: now,
        completedAt: null,
        updatedAt: now,
      })
      .where("id = :deliveryId AND status IN ('succeeded', 'failed')", { deliveryId })
      .returning('max_attempts')
      .execute();
    const [retried] = updated.raw as { max_attempts: number }[];
    if (!retried) {
      throw ApiError.invalidField('status', 'the delivery is already being retried');
    }
    const jobId = manualJobId(deliveryId, retried.max_attempts);
    await this.queue.enqueue([{ deliveryId, url: webhook.url, workspaceId, jobId }], 'manual');
    return this.findDelivery(workspaceId, webhookId, deliveryId);
  }

  private async findDelivery(workspaceId: string, webhookId: string, deliveryId: string): Promise<DeliveryEntity> {
    // Only a CUID2 can be a delivery id; anything else (a NUL byte would make Postgres fail) is unknown.
    if (!isCuid2(deliveryId)) throw ApiError.notFound(`Delivery ${deliveryId} not found`);
    const delivery = await this.dataSource
      .getRepository(DeliveryEntity)
      .findOneBy({ id: deliveryId, webhookId, workspaceId });
    if (!delivery) throw ApiError.notFound(`Delivery ${deliveryId} not found`);
    return delivery;
  }
}
