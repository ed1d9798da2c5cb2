import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { ApiError } from '../../core/http/api-error.js';
import { isCuid2 } from '../../core/ids.js';
import { SubmissionEntity } from '../../submissions/submission.entity.js';
import { WebhooksService } from '../../webhooks/webhooks.service.js';
import { encodeCursor } from '../../core/http/log-cursor.js';
import { storedPayload } from '../delivery-payload.js';
import { HostWakes } from '../host-wakes.js';
import { DeliveryAttemptEntity, DeliveryEntity } from '../delivery.entity.js';
import { DeliveryStore } from '../store/delivery-store.js';
import type { ListWebhookDeliveriesQuery, WorkspaceLogFilter } from './list-deliveries.query.js';

export interface DeliveryDetail {
  delivery: DeliveryEntity;
  attempts: DeliveryAttemptEntity[];
  payload: unknown;
}

/** The delivery log of a webhook of the caller's workspace, and manual redelivery. */
@Injectable()
export class DeliveryLogService {
  constructor(
    @InjectRepository(DeliveryEntity) private readonly deliveries: Repository<DeliveryEntity>,
    @InjectRepository(DeliveryAttemptEntity) private readonly attempts: Repository<DeliveryAttemptEntity>,
    @InjectRepository(SubmissionEntity) private readonly submissions: Repository<SubmissionEntity>,
    private readonly webhooks: WebhooksService,
    private readonly wakes: HostWakes,
    private readonly store: DeliveryStore,
  ) {}

  async list(workspaceId: string, webhookId: string, filter: ListWebhookDeliveriesQuery): Promise<DeliveryEntity[]> {
    await this.webhooks.get(workspaceId, webhookId);
    return this.deliveries.find({
      where: { webhookId, workspaceId, ...(filter.status ? { status: filter.status } : {}) },
      order: { createdAt: 'DESC', id: 'DESC' },
      take: filter.limit,
      skip: filter.offset,
    });
  }

  async get(workspaceId: string, webhookId: string, deliveryId: string): Promise<DeliveryDetail> {
    await this.webhooks.get(workspaceId, webhookId);
    return this.detail(await this.findDelivery(workspaceId, webhookId, deliveryId));
  }

  /**
   * The workspace's log (DESIGN 7.2), removed webhooks' deliveries included, newest first. Keyset paging
   * on (created_at, id), so deliveries arriving between pages never shift them; deliveries_workspace_log_idx.
   */
  async listWorkspace(
    workspaceId: string,
    filter: WorkspaceLogFilter,
  ): Promise<{ deliveries: DeliveryEntity[]; nextCursor: string | null }> {
    const query = this.deliveries.createQueryBuilder('d').where('d.workspace_id = :workspaceId', { workspaceId });
    if (filter.status) query.andWhere('d.status = :status', { status: filter.status });
    if (filter.webhookId) query.andWhere('d.webhook_id = :webhookId', { webhookId: filter.webhookId });
    if (filter.calculatorId) query.andWhere('d.calculator_id = :calculatorId', { calculatorId: filter.calculatorId });
    if (filter.submissionId) query.andWhere('d.submission_id = :submissionId', { submissionId: filter.submissionId });
    if (filter.statusCode) {
      // deliveries_status_code_log_idx: the class is its key, an exact code a filter within the class.
      query.andWhere('d.last_status_code IS NOT NULL AND d.last_status_code / 100 = :statusClass', {
        statusClass: Number(filter.statusCode[0]),
      });
      if (!filter.statusCode.endsWith('xx')) {
        query.andWhere('d.last_status_code = :statusCode', { statusCode: Number(filter.statusCode) });
      }
    }
    if (filter.since) query.andWhere('d.created_at >= :since', { since: filter.since });
    if (filter.until) query.andWhere('d.created_at < :until', { until: filter.until });
    if (filter.after) {
      const { createdAt, id } = filter.after;
      // The plain bound lets the planner prune the partitions after the cursor; the row comparison cannot.
      query.andWhere('d.created_at <= :afterAt AND (d.created_at, d.id) < (:afterAt, :afterId)', {
        afterAt: createdAt,
        afterId: id,
      });
    }
    // One row more than the page tells whether another page follows, without an empty last page.
    const rows = await query
      .orderBy('d.created_at', 'DESC')
      .addOrderBy('d.id', 'DESC')
      .limit(filter.limit + 1)
      .getMany();
    const deliveries = rows.slice(0, filter.limit);
    const last = deliveries[deliveries.length - 1];
    return { deliveries, nextCursor: rows.length > filter.limit ? encodeCursor(workspaceId, last) : null };
  }

  /** One delivery of the workspace, also of a removed webhook. */
  async getInWorkspace(workspaceId: string, deliveryId: string): Promise<DeliveryDetail> {
    return this.detail(await this.findDelivery(workspaceId, undefined, deliveryId));
  }

  private async detail(delivery: DeliveryEntity): Promise<DeliveryDetail> {
    const [attempts, submission] = await Promise.all([
      this.attempts.find({
        where: { deliveryId: delivery.id, deliveryCreatedAt: delivery.createdAt },
        order: { attemptNumber: 'ASC', startedAt: 'ASC' },
      }),
      delivery.submissionId === null ? null : this.submissions.findOneByOrFail({ id: delivery.submissionId }),
    ]);
    // A test delivery (DESIGN 7.4) carries its sample submission instead of a stored one, an operational
    // event's delivery (DESIGN 10) the event it sends.
    const payload = delivery.event ?? storedPayload(delivery.webhookId, submission, delivery.testSubmission);
    return { delivery, attempts, payload };
  }

  /**
   * An ended delivery is sent once more, now, with the same webhook-id; a pending one has its next
   * attempt moved to now (no attempt is added). 400 while the webhook is disabled.
   */
  async retry(workspaceId: string, webhookId: string, deliveryId: string): Promise<DeliveryEntity> {
    await this.webhooks.getActive(workspaceId, webhookId);
    const delivery = await this.findDelivery(workspaceId, webhookId, deliveryId);
    const retried = await this.store.retry(delivery, delivery.status === 'pending');
    if (retried === null) {
      throw ApiError.invalidField('status', 'the delivery changed meanwhile (another retry, or its attempt ended)');
    }
    await this.wakes.wake([{ host: retried.host }]);
    return this.findDelivery(workspaceId, webhookId, deliveryId);
  }

  /** Without `webhookId`, any delivery of the workspace. */
  private async findDelivery(
    workspaceId: string,
    webhookId: string | undefined,
    deliveryId: string,
  ): Promise<DeliveryEntity> {
    // Only a CUID2 can be a delivery id; anything else (a NUL byte would make Postgres fail) is unknown.
    if (!isCuid2(deliveryId)) throw ApiError.notFound(`Delivery ${deliveryId} not found`);
    const delivery = await this.deliveries.findOneBy({
      id: deliveryId,
      workspaceId,
      ...(webhookId ? { webhookId } : {}),
    });
    if (!delivery) throw ApiError.notFound(`Delivery ${deliveryId} not found`);
    return delivery;
  }
}
