import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, type EntityManager, type Repository } from 'typeorm';
import { clientOf, executePrepared, queryPrepared, queryPreparedOn } from '../../core/database/prepared.js';
import { newId } from '../../core/ids.js';
import type { WorkspaceEvent } from '../../operational-webhooks/operational-event.js';
import type { DeliveryJobs, DeliveryToEnqueue } from '../delivery-queue.js';
import { DeliveryEntity } from '../delivery.entity.js';
import { TRANSITIONS } from './delivery-lifecycle.js';
import {
  DUE_BEFORE,
  FAILED_DELIVERIES,
  OPERATIONAL_EVENT_RECEIVERS,
  OPERATIONAL_EVENTS_INSERT,
  OPERATIONAL_WEBHOOK_REMOVE,
  OLDEST_PENDING_AGE,
  OVERDUE_PAGE,
  RECOVER,
  RELEASE_LEASE,
  RETRY_ENDED,
  RETRY_PENDING_NOW,
  SUBMISSION_WITH_OUTBOX,
  WEBHOOK_DISABLE,
  WEBHOOK_REMOVE,
} from './delivery-statements.js';

/** A submission to store with its outbox (SUBMISSION_WITH_OUTBOX's parameters). */
export interface SubmissionWithOutbox {
  submissionId: string;
  calculatorId: string;
  workspaceId: string;
  at: Date;
  finished: boolean;
  data: Record<string, unknown>;
  meta: Record<string, unknown>;
  /** One id per webhook expected; when the calculator has more, nothing is written (see `bound`). */
  deliveryIds: string[];
  /** Attempts in all by the webhook's retry schedule (`none`: 1). */
  maxAttempts: { standard: number; short: number };
}

export interface OutboxWritten {
  created: number;
  /** Webhooks bound to the calculator: when more than the ids sent, nothing was written. */
  bound: number;
  delivery_ids: string[];
  urls: string[];
  webhook_ids: string[];
  /** Each webhook's own in-flight cap (null: the default), for the job's admission. */
  max_in_flights: (number | null)[];
}

export interface OverdueDelivery {
  id: string;
  createdAt: Date;
  nextAttemptAt: Date;
  url: string;
  workspaceId: string;
  webhookId: string;
}

/** A delivery whose attempt was just recorded: its id and created_at (its partition). */
export interface EndedDelivery {
  deliveryId: string;
  deliveryCreatedAt: Date;
}

/** A delivery that ended failed, with its webhook, its submission (null for a test), its last attempt (if any). */
export interface FailedDelivery {
  id: string;
  workspaceId: string;
  webhookId: string;
  webhookName: string;
  webhookUrl: string;
  testSubmission: Record<string, unknown> | null;
  submissionId: string | null;
  calculatorId: string;
  finished: boolean;
  data: Record<string, unknown>;
  meta: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
  attemptNumber: number | null;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  responseBody: string | null;
  error: string | null;
}

/**
 * Owns every write to `deliveries` and `delivery_attempts` made outside the worker's hot path, one method
 * per transition of delivery-lifecycle.ts; the worker's claim and record are AttemptClaims and
 * AttemptRecords beside it. Nothing else writes those tables.
 */
@Injectable()
export class DeliveryStore {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(DeliveryEntity) private readonly deliveries: Repository<DeliveryEntity>,
  ) {}

  /** create: the submission, its calculator's counters and one outbox row per bound webhook, atomically. */
  async createForSubmission(s: SubmissionWithOutbox): Promise<OutboxWritten> {
    const [written] = await queryPrepared<OutboxWritten>(this.dataSource, SUBMISSION_WITH_OUTBOX, [
      s.submissionId,
      s.calculatorId,
      s.workspaceId,
      s.at,
      s.finished,
      JSON.stringify(s.data),
      JSON.stringify(s.meta),
      s.deliveryIds,
      s.maxAttempts.standard,
      s.maxAttempts.short,
    ]);
    return written;
  }

  /** create: a test event's delivery, in the caller's transaction (which holds its webhook's row). */
  createTest(
    manager: EntityManager,
    delivery: Omit<DeliveryEntity, 'status' | 'attemptCount' | 'event'>,
  ): Promise<DeliveryEntity> {
    return manager.save(manager.create(DeliveryEntity, { ...delivery, status: 'pending', attemptCount: 0 }));
  }

  /**
   * create: one delivery per operational webhook subscribed to each event (DESIGN 10), in the caller's
   * transaction (the change the event reports, when it has one); returns them for the caller to enqueue.
   */
  async createEvents(
    manager: EntityManager,
    events: WorkspaceEvent[],
    maxAttempts: number,
  ): Promise<DeliveryToEnqueue[]> {
    if (events.length === 0) return [];
    const receivers = (await manager.query(OPERATIONAL_EVENT_RECEIVERS, [
      events.map((e) => e.workspaceId),
      events.map((e) => e.event.type),
    ])) as { n: number; id: string; url: string; workspaceId: string }[];
    if (receivers.length === 0) return [];
    const ids = receivers.map(() => newId());
    const now = new Date();
    await manager.query(OPERATIONAL_EVENTS_INSERT, [
      ids,
      receivers.map((r) => r.workspaceId),
      receivers.map((r) => r.id),
      receivers.map((r) => JSON.stringify(events[r.n - 1].event)),
      maxAttempts,
      now,
    ]);
    return receivers.map((r, i) => ({
      deliveryId: ids[i],
      createdAt: now,
      url: r.url,
      workspaceId: r.workspaceId,
      webhookId: r.id,
    }));
  }

  /** Of these deliveries, the webhooks' ones that ended failed (operational webhooks' aside), for delivery.failed. */
  async failedDeliveries(deliveries: EndedDelivery[]): Promise<FailedDelivery[]> {
    if (deliveries.length === 0) return [];
    const times = deliveries.map((d) => d.deliveryCreatedAt.getTime());
    return (await this.dataSource.query(FAILED_DELIVERIES, [
      deliveries.map((d) => d.deliveryId),
      new Date(Math.min(...times)),
      new Date(Math.max(...times)),
    ])) as FailedDelivery[];
  }

  /**
   * cancel (`remove`, `remove-operational`) or skip (`disable`) behind the removal fence: waits for attempts
   * writing their request to this webhook and holds off new ones, changes the webhook and ends its pending
   * deliveries; in `manager`'s transaction when given (the fence is then held until it commits). Returns
   * the webhook's row as it was with the ended deliveries, whose jobs the caller removes; null when the
   * workspace has no such webhook (removed, or for disable already disabled).
   */
  async stopWebhook<Row>(
    change: 'remove' | 'disable' | 'remove-operational',
    workspaceId: string,
    webhookId: string,
    manager?: EntityManager,
  ): Promise<(Row & { ended: DeliveryJobs[] }) | null> {
    const statement = {
      remove: WEBHOOK_REMOVE,
      disable: WEBHOOK_DISABLE,
      'remove-operational': OPERATIONAL_WEBHOOK_REMOVE,
    }[change];
    const values = [webhookId, workspaceId, new Date()];
    const [row] = manager
      ? await queryPreparedOn<Row & { ended: DeliveryJobs[] }>(await clientOf(manager), statement, values)
      : await queryPrepared<Row & { ended: DeliveryJobs[] }>(this.dataSource, statement, values);
    return row ?? null;
  }

  /** release: gives back a claim whose request never went out, so the next try claims it at once. */
  async releaseLease(deliveryId: string, createdAt: Date): Promise<void> {
    await executePrepared(this.dataSource, RELEASE_LEASE, [deliveryId, createdAt]);
  }

  /**
   * retry: an ended delivery gets one more attempt, now; a pending one has its next attempt moved to now.
   * Returns its max_attempts, or null when it changed meanwhile (another retry, or its attempt ended).
   */
  async retry({ id, createdAt }: { id: string; createdAt: Date }, pending: boolean): Promise<number | null> {
    const now = new Date();
    const [row] = pending
      ? await queryPrepared<{ max_attempts: number }>(this.dataSource, RETRY_PENDING_NOW, [id, now, createdAt])
      : await queryPrepared<{ max_attempts: number }>(this.dataSource, RETRY_ENDED, [
          [id],
          now,
          TRANSITIONS.retry.from.filter((status) => status !== 'pending'),
          createdAt,
          createdAt,
        ]);
    return row?.max_attempts ?? null;
  }

  /**
   * recover: failed or skipped deliveries back to pending, in the recovery batch's transaction; `batch` in
   * created_at order, so its first and last name the partitions to look in.
   */
  async recover(
    manager: EntityManager,
    batch: { id: string; createdAt: Date }[],
  ): Promise<{ id: string; max_attempts: number }[]> {
    if (batch.length === 0) return [];
    if (!manager.queryRunner) throw new Error('recover runs in a transaction');
    const bounds = [batch[0].createdAt, batch[batch.length - 1].createdAt];
    const ids = batch.map((d) => d.id);
    const result = await manager.queryRunner.query(
      RECOVER,
      [ids, new Date(), TRANSITIONS.recover.from, ...bounds],
      true,
    );
    return result.records as { id: string; max_attempts: number }[];
  }

  /** The sweeper's horizon: deliveries due before this have waited longer than `graceMs` for their job. */
  async dueBefore(graceMs: number): Promise<Date> {
    const [{ dueBefore }] = await queryPrepared<{ dueBefore: Date }>(this.dataSource, DUE_BEFORE, [graceMs]);
    return dueBefore;
  }

  /** One page of pending deliveries due before `dueBefore`, after `after` in (next_attempt_at, id) order. */
  overdue(
    dueBefore: Date,
    after: { nextAttemptAt: Date | string; id: string },
    limit: number,
  ): Promise<OverdueDelivery[]> {
    return queryPrepared<OverdueDelivery>(this.dataSource, OVERDUE_PAGE, [
      dueBefore,
      after.nextAttemptAt,
      after.id,
      limit,
    ]);
  }

  /** How many of the webhook's deliveries are pending (its health). */
  countPending(webhookId: string): Promise<number> {
    return this.deliveries.countBy({ webhookId, status: 'pending' });
  }

  /** Seconds the oldest pending delivery has been due, on the database's clock (0 when none is). */
  async oldestPendingAgeSeconds(): Promise<number> {
    const [row] = await queryPrepared<{ age: number | null }>(this.dataSource, OLDEST_PENDING_AGE, []);
    return row?.age ?? 0;
  }
}
