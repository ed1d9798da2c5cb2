import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, type EntityManager, type Repository } from 'typeorm';
import { clientOf, executePrepared, queryPrepared, queryPreparedOn } from '../../core/database/prepared.js';
import { newId } from '../../core/ids.js';
import type { TraceCarrier } from '../../core/tracing/tracing.js';
import type { WorkspaceEvent } from '../../operational-webhooks/operational-event.js';
import { DeliveryEntity } from '../delivery.entity.js';
import { TRANSITIONS } from './delivery-lifecycle.js';
import {
  DUE_BEFORE,
  FAILED_DELIVERIES,
  HOST_NEXT_DUE,
  HOST_PICK,
  OPERATIONAL_EVENT_RECEIVERS,
  OPERATIONAL_EVENTS_INSERT,
  OPERATIONAL_WEBHOOK_REMOVE,
  OLDEST_PENDING_AGE,
  OVERDUE_HOSTS,
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
  /** The request's W3C trace context, kept with the deliveries; absent when tracing is off. */
  trace?: TraceCarrier;
}

export interface OutboxWritten {
  created: number;
  /** Webhooks bound to the calculator: when more than the ids sent, nothing was written. */
  bound: number;
  delivery_ids: string[];
  /** The hosts of the pending deliveries written, to wake. */
  hosts: string[];
}

/** A host whose next delivery fell due at `at`. */
export interface OverdueHost {
  host: string;
  at: Date | null;
}

/** A due delivery a host's drain picked, to claim and attempt. */
export interface PickedDelivery {
  id: string;
  created_at: Date;
  webhook_id: string;
  workspace_id: string;
  url: string;
  next_trigger: 'scheduled' | 'manual';
  trace: TraceCarrier | null;
  next_attempt_at: Date;
}

/** What a drain asks of a pick: how many, and what it already has in flight and may not exceed. */
export interface PickRequest {
  host: string;
  room: number;
  /** Webhooks with attempts in flight in this drain, and how many each. */
  busy: Map<string, number>;
  defaultCap: number;
  /** Workspaces at their share of this worker's sockets. */
  fullWorkspaces: string[];
  /** The drain's lane of the host's `lanes` (one unless the host is drained by several workers). */
  lane: number;
  lanes: number;
  /** Per webhook, the due time of the last delivery this drain picked: its scan starts there. */
  after: Map<string, Date>;
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
      s.trace ? JSON.stringify(s.trace) : null,
    ]);
    return written;
  }

  /**
   * create: a test event's delivery, in the caller's transaction (which holds its webhook's row), at the
   * host of the webhook's `url` as url_destination names it.
   */
  async createTest(
    manager: EntityManager,
    url: string,
    delivery: Omit<DeliveryEntity, 'status' | 'attemptCount' | 'event' | 'host' | 'nextTrigger'>,
  ): Promise<DeliveryEntity> {
    const [{ host }] = (await manager.query('SELECT url_destination($1) AS host', [url])) as { host: string }[];
    const values = { ...delivery, host, nextTrigger: 'manual' as const, status: 'pending' as const, attemptCount: 0 };
    return manager.save(manager.create(DeliveryEntity, values));
  }

  /**
   * create: one delivery per operational webhook subscribed to each event (DESIGN 10), in the caller's
   * transaction (the change the event reports, when it has one); returns their hosts, for the caller to wake.
   */
  async createEvents(manager: EntityManager, events: WorkspaceEvent[], maxAttempts: number): Promise<string[]> {
    if (events.length === 0) return [];
    const receivers = (await manager.query(OPERATIONAL_EVENT_RECEIVERS, [
      events.map((e) => e.workspaceId),
      events.map((e) => e.event.type),
    ])) as { n: number; id: string; url: string; workspaceId: string }[];
    if (receivers.length === 0) return [];
    const ids = receivers.map(() => newId());
    const now = new Date();
    const inserted = (await manager.query(OPERATIONAL_EVENTS_INSERT, [
      ids,
      receivers.map((r) => r.workspaceId),
      receivers.map((r) => r.id),
      receivers.map((r) => JSON.stringify(events[r.n - 1].event)),
      maxAttempts,
      now,
    ])) as { host: string }[];
    return [...new Set(inserted.map((r) => r.host))];
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
   * the webhook's row as it was with how many deliveries ended; null when the workspace has no such
   * webhook (removed, or for disable already disabled).
   */
  async stopWebhook<Row>(
    change: 'remove' | 'disable' | 'remove-operational',
    workspaceId: string,
    webhookId: string,
    manager?: EntityManager,
  ): Promise<(Row & { ended: number }) | null> {
    const statement = {
      remove: WEBHOOK_REMOVE,
      disable: WEBHOOK_DISABLE,
      'remove-operational': OPERATIONAL_WEBHOOK_REMOVE,
    }[change];
    const values = [webhookId, workspaceId, new Date()];
    const [row] = manager
      ? await queryPreparedOn<Row & { ended: number }>(await clientOf(manager), statement, values)
      : await queryPrepared<Row & { ended: number }>(this.dataSource, statement, values);
    return row ?? null;
  }

  /** release: gives back a claim whose request never went out, so the next try claims it at once. */
  async releaseLease(deliveryId: string, createdAt: Date): Promise<void> {
    await executePrepared(this.dataSource, RELEASE_LEASE, [deliveryId, createdAt]);
  }

  /**
   * retry: an ended delivery gets one more attempt, now; a pending one has its next attempt moved to now.
   * Returns its max_attempts and host (to wake), or null when it changed meanwhile (another retry, or its
   * attempt ended).
   */
  async retry(
    { id, createdAt }: { id: string; createdAt: Date },
    pending: boolean,
  ): Promise<{ max_attempts: number; host: string } | null> {
    const now = new Date();
    type Row = { max_attempts: number; host: string };
    const [row] = pending
      ? await queryPrepared<Row>(this.dataSource, RETRY_PENDING_NOW, [id, now, createdAt])
      : await queryPrepared<Row>(this.dataSource, RETRY_ENDED, [
          [id],
          now,
          TRANSITIONS.retry.from.filter((status) => status !== 'pending'),
          createdAt,
          createdAt,
        ]);
    return row ?? null;
  }

  /**
   * recover: failed or skipped deliveries back to pending, in the recovery batch's transaction; `batch` in
   * created_at order, so its first and last name the partitions to look in.
   */
  async recover(
    manager: EntityManager,
    batch: { id: string; createdAt: Date }[],
  ): Promise<{ id: string; max_attempts: number; host: string }[]> {
    if (batch.length === 0) return [];
    if (!manager.queryRunner) throw new Error('recover runs in a transaction');
    const bounds = [batch[0].createdAt, batch[batch.length - 1].createdAt];
    const ids = batch.map((d) => d.id);
    const result = await manager.queryRunner.query(
      RECOVER,
      [ids, new Date(), TRANSITIONS.recover.from, ...bounds],
      true,
    );
    return result.records as { id: string; max_attempts: number; host: string }[];
  }

  /** The sweeper's horizon: deliveries due before this have waited longer than `graceMs` for their drain. */
  async dueBefore(graceMs: number): Promise<Date> {
    const [{ dueBefore }] = await queryPrepared<{ dueBefore: Date }>(this.dataSource, DUE_BEFORE, [graceMs]);
    return dueBefore;
  }

  /** One page of the hosts with pending deliveries, after `after` in host order, each with its next due time. */
  hostsAfter(after: string, limit: number): Promise<OverdueHost[]> {
    return queryPrepared<OverdueHost>(this.dataSource, OVERDUE_HOSTS, [after, limit]);
  }

  /** pick: a host's due deliveries for its drain (HOST_PICK). */
  pick({ host, room, busy, defaultCap, fullWorkspaces, lane, lanes, after }: PickRequest): Promise<PickedDelivery[]> {
    return queryPrepared<PickedDelivery>(this.dataSource, HOST_PICK, [
      host,
      room,
      [...busy.keys()],
      [...busy.values()],
      defaultCap,
      fullWorkspaces,
      lane,
      lanes,
      [...after.keys()],
      [...after.values()],
    ]);
  }

  /** When the host's next pending delivery falls due; null when it has none. */
  async nextDue(host: string): Promise<Date | null> {
    const [row] = await queryPrepared<{ at: Date | null }>(this.dataSource, HOST_NEXT_DUE, [host]);
    return row?.at ?? null;
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
