import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, type EntityManager, type Repository } from 'typeorm';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { operationalEvent } from '../../operational-webhooks/operational-event.js';
import { OperationalEvents } from '../../operational-webhooks/operational-events.js';
import { ScheduledJob } from '../../scheduling/scheduled-job.js';
import { WebhookEntity } from '../../webhooks/webhook.entity.js';
import { HostWakes } from '../host-wakes.js';
import { DeliveryEntity } from '../delivery.entity.js';
import { TRANSITIONS } from '../store/delivery-lifecycle.js';
import { DeliveryStore } from '../store/delivery-store.js';
import { RecoveryEntity } from './recovery.entity.js';

const BATCH = 500;
// Between two batches of one recovery: a large recovery leaves room to the deliveries it queued.
const BATCH_PAUSE_MS = 50;
/*
 * How often running recoveries get their next batches: the look is one read of the small partial index
 * recoveries_running_idx, so a recovery starts within a second of being asked for.
 */
const RUN_EVERY_MS = 1_000;

type BatchOutcome = 'more' | 'done' | 'idle';

/**
 * Carries out recoveries (DESIGN 7.3) in batches. Each batch is one transaction: it takes the recovery
 * row (SKIP LOCKED, so workers share recoveries instead of repeating each other's batch), requeues the
 * next failed or skipped deliveries after its cursor and moves the cursor past them; the jobs are
 * enqueued after commit. A crash resumes at the cursor, so no delivery is requeued twice by one
 * recovery, and a crash before the enqueue leaves pending deliveries the sweeper enqueues.
 */
@Injectable()
export class RecoveryRunner {
  private readonly logger = new Logger('RecoveryRunner');

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(RecoveryEntity) private readonly recoveries: Repository<RecoveryEntity>,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly wakes: HostWakes,
    private readonly store: DeliveryStore,
    private readonly events: OperationalEvents,
  ) {}

  /** One batch of each running recovery in turn, until none has more to do now or `signal` is aborted. */
  @ScheduledJob({ name: 'run-recoveries', every: (config) => Math.min(RUN_EVERY_MS, config.sweepIntervalMs) })
  async runOnce(signal?: AbortSignal): Promise<void> {
    let progressed = true;
    while (progressed && !signal?.aborted) {
      progressed = false;
      const ids = await this.runningIds();
      for (const id of ids) {
        if (signal?.aborted) break;
        if ((await this.batch(id)) === 'more') progressed = true;
      }
      if (progressed) await new Promise((resolve) => setTimeout(resolve, BATCH_PAUSE_MS));
    }
  }

  private async runningIds(): Promise<string[]> {
    const rows = await this.recoveries.find({
      select: { id: true },
      where: { status: 'running' },
      order: { createdAt: 'ASC' },
      take: 100,
    });
    return rows.map((r) => r.id);
  }

  private async batch(recoveryId: string): Promise<BatchOutcome> {
    const { outcome, hosts, reported } = await this.dataSource.transaction((manager) =>
      this.requeueBatch(manager, recoveryId),
    );
    await this.wakes.wake(hosts.map((host) => ({ host })));
    await this.events.wake(reported);
    if (outcome === 'done') this.logger.log(`Recovery ${recoveryId} completed`);
    return outcome;
  }

  private async requeueBatch(
    manager: EntityManager,
    recoveryId: string,
  ): Promise<{ outcome: BatchOutcome; hosts: string[]; reported: string[] }> {
    const idle = { outcome: 'idle' as const, hosts: [], reported: [] };
    const found = await manager.findOne(RecoveryEntity, { select: { webhookId: true }, where: { id: recoveryId } });
    if (!found) return idle;
    // The webhook first, as DELETE locks it (FOR UPDATE) before it cancels the recovery: no deadlock,
    // and a removal waits for this batch, then cancels the deliveries it requeued.
    const webhook = await manager
      .createQueryBuilder(WebhookEntity, 'w')
      .setLock('for_key_share')
      .where('w.id = :id', { id: found.webhookId })
      .getOne();
    const recovery = await manager
      .createQueryBuilder(RecoveryEntity, 'r')
      .setLock('pessimistic_write')
      .setOnLocked('skip_locked')
      .where("r.id = :recoveryId AND r.status = 'running'", { recoveryId })
      .getOne();
    if (!recovery) return idle; // ended, or another worker is on its batch
    if (!webhook || webhook.removedAt) {
      await this.end(manager, recoveryId, 'cancelled');
      return idle;
    }
    if (webhook.disabledAt) return idle; // sending now would only skip them again: resumes once enabled
    const batch = await manager
      .createQueryBuilder(DeliveryEntity, 'd')
      .select(['d.id', 'd.createdAt'])
      .setLock('pessimistic_write')
      .where('d.webhook_id = :webhookId AND d.created_at >= :since AND d.created_at < :until', {
        webhookId: recovery.webhookId,
        since: recovery.since,
        until: recovery.until,
      })
      .andWhere('d.status IN (:...statuses)', { statuses: TRANSITIONS.recover.from })
      // What `matched` counted: failed or skipped when the recovery was asked for, not ended since.
      .andWhere('d.updated_at <= :asked', { asked: recovery.createdAt })
      // The plain bound lets the planner prune the partitions before the cursor; the row comparison cannot.
      .andWhere('d.created_at >= :afterAt AND (d.created_at, d.id) > (:afterAt, :afterId)', {
        afterAt: recovery.cursorCreatedAt ?? recovery.since,
        afterId: recovery.cursorId ?? '',
      })
      .orderBy('d.created_at', 'ASC')
      .addOrderBy('d.id', 'ASC')
      .limit(BATCH)
      .getMany();
    const requeued = await this.store.recover(manager, batch);
    const last = batch[batch.length - 1];
    const done = batch.length < BATCH;
    await manager.update(
      RecoveryEntity,
      { id: recoveryId },
      {
        ...(last ? { cursorCreatedAt: last.createdAt, cursorId: last.id } : {}),
        requeued: () => `requeued + ${requeued.length}`,
        updatedAt: new Date(),
      },
    );
    const reported = done ? await this.complete(manager, recovery, requeued.length) : [];
    return { outcome: done ? 'done' : 'more', hosts: [...new Set(requeued.map((d) => d.host))], reported };
  }

  /** Ends the recovery and writes its recovery.completed event in the same transaction (DESIGN 10). */
  private async complete(manager: EntityManager, recovery: RecoveryEntity, lastBatch: number): Promise<string[]> {
    const completedAt = await this.end(manager, recovery.id, 'completed');
    const event = operationalEvent(recovery.workspaceId, 'recovery.completed', {
      recoveryId: recovery.id,
      webhookId: recovery.webhookId,
      since: recovery.since.toISOString(),
      until: recovery.until.toISOString(),
      matched: recovery.matched,
      requeued: recovery.requeued + lastBatch,
      completedAt: completedAt.toISOString(),
    });
    return this.events.write(manager, [event]);
  }

  private async end(manager: EntityManager, recoveryId: string, status: 'completed' | 'cancelled'): Promise<Date> {
    const now = new Date();
    await manager.update(RecoveryEntity, { id: recoveryId }, { status, completedAt: now, updatedAt: now });
    return now;
  }
}
