import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, type Repository } from 'typeorm';
import { CalculatorEntity } from '../../calculators/calculator.entity.js';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { ApiError } from '../../core/http/api-error.js';
import { newId } from '../../core/ids.js';
import { serializeSubmission } from '../../submissions/submission.serializer.js';
import { WebhookCalculatorEntity, WebhookEntity } from '../../webhooks/webhook.entity.js';
import { assertWebhookActive, WebhooksService } from '../../webhooks/webhooks.service.js';
import { HostWakes } from '../host-wakes.js';
import { currentTraceCarrier } from '../../core/tracing/tracing.js';
import { DeliveryEntity } from '../delivery.entity.js';
import { maxAttemptsFor, scheduleDelaysMs } from '../retry-schedule.js';
import { DeliveryStore } from '../store/delivery-store.js';

/** What a receiver gets from a test event: answers of the kind a calculator collects. */
const SAMPLE_ANSWERS = { name: 'Jane Doe', email: 'jane.doe@example.com', quantity: 3, total: 149.97 };

/**
 * Test events (DESIGN 7.4): a delivery of a sample submission, signed, attempted, logged and retried
 * like any other. The sample lives on the delivery (test_submission); nothing is stored in submissions
 * and no calculator counter moves. The claim builds its payload from it.
 */
@Injectable()
export class TestEventService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(DeliveryEntity) private readonly deliveries: Repository<DeliveryEntity>,
    @InjectRepository(WebhookCalculatorEntity) private readonly bindings: Repository<WebhookCalculatorEntity>,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly webhooks: WebhooksService,
    private readonly wakes: HostWakes,
    private readonly store: DeliveryStore,
  ) {}

  async send(workspaceId: string, webhookId: string): Promise<DeliveryEntity> {
    await this.webhooks.getActive(workspaceId, webhookId);
    const calculatorId = await this.sampleCalculator(webhookId);
    const now = new Date();
    const sample = serializeSubmission({
      id: newId(),
      calculatorId,
      finished: true,
      data: SAMPLE_ANSWERS,
      meta: { test: true },
      createdAt: now,
      updatedAt: now,
    });
    const delivery = await this.dataSource.transaction(async (manager) => {
      // Shared with other writers, exclusive against disable and DELETE (which lock the row for update).
      const current = await manager
        .createQueryBuilder(WebhookEntity, 'w')
        .setLock('pessimistic_read')
        .where('w.id = :webhookId AND w.removed_at IS NULL', { webhookId })
        .getOne();
      if (!current) throw ApiError.notFound(`Webhook ${webhookId} not found`);
      assertWebhookActive(current);
      return this.store.createTest(manager, current.url, {
        id: newId(),
        workspaceId,
        webhookId,
        submissionId: null,
        testSubmission: { ...sample },
        calculatorId,
        maxAttempts: maxAttemptsFor(scheduleDelaysMs(current.retrySchedule, this.config)),
        nextAttemptAt: now,
        lastAttemptAt: null,
        lastStatusCode: null,
        lastError: null,
        createdAt: now,
        updatedAt: now,
        completedAt: null,
        trace: currentTraceCarrier() ?? null,
      });
    });
    await this.wakes.wake([{ host: delivery.host! }]);
    return this.deliveries.findOneByOrFail({ id: delivery.id, createdAt: now });
  }

  /** One of the webhook's calculators: a live one when there is one. */
  private async sampleCalculator(webhookId: string): Promise<string> {
    const bound = await this.bindings
      .createQueryBuilder('wc')
      .innerJoin(CalculatorEntity, 'c', 'c.id = wc.calculatorId')
      .select('wc.calculatorId', 'id')
      .where('wc.webhookId = :webhookId', { webhookId })
      .orderBy('c.removedAt IS NULL', 'DESC')
      .addOrderBy('c.createdAt')
      .addOrderBy('c.id')
      .limit(1)
      .getRawOne<{ id: string }>();
    if (!bound) throw ApiError.invalidField('webhookId', 'the webhook has no calculator to take a sample from');
    return bound.id;
  }
}
