import { Inject, Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { DelayedError, Job } from 'bullmq';
import type { AppConfig } from '../../../core/config/config.js';
import { APP_CONFIG } from '../../../core/config/config.module.js';
import { RedisClients } from '../../../core/redis/redis.module.js';
import { DELIVER_JOB, DeliveryQueue, type DeliverJobData } from '../../delivery-queue.js';
import type { SendResult } from '../webhook-sender.js';
import { HostAdmission, type Attempted, type HostSignal, type Woken } from './host-admission.js';
import { WebhookCaps } from './webhook-caps.js';
import { TurnWaits } from './turn-waits.js';
import { WorkerShare } from './worker-share.js';

// A job waits in process (for its workspace's share here, or its turn at its host) while what it waits for
// frees a slot at least this often; then it parks.
const IDLE_WAIT_MS = 100;
// However busy its host, a job waits in process for its turn at most this long (a wake that never came).
const LONGEST_TURN_WAIT_MS = 1_000;
// How often this worker's event-loop delay, which every answer's measured latency includes, is read.
const LOOP_DELAY_EVERY_MS = 500;

/** An admitted attempt: what its end gives back. */
export interface Ticket {
  destination: string;
  holder: string;
  webhookId: string;
  workspaceId: string;
  admittedAt: number;
  /** Whether its slots were given back already (the receiver answered). */
  left: boolean;
}

/** What an attempt's result showed of its host, for the adaptive limit and the breaker. */
export function signalOf(send: SendResult | undefined): HostSignal {
  if (!send) return 'other';
  const { statusCode, failure } = send;
  if (statusCode !== null) {
    if (statusCode >= 200 && statusCode < 300) return 'ok';
    return statusCode === 429 ? '429' : statusCode === 503 ? '503' : 'answered';
  }
  return failure ?? 'other';
}

/**
 * Admission: when an attempt may start. One design, in this order:
 * - Its workspace's share of this worker (WorkerShare): a quarter of the slots always, more while a
 *   quarter stays free, so one workspace's hanging receivers never take every slot. A slot is held
 *   until the receiver answers, as the host's is: the record after the answer cannot hang.
 * - Its host (HostAdmission, in Redis, shared by all workers): the breaker, the webhook's cap (its own
 *   `maxInFlight`, else DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK; WebhookCaps) and the host's adaptive limit (decideLimit); the breaker is the
 *   limit's other end (opening sets it to the minimum).
 * - Waiting: a job turned away is in line (the host's, served in turn by workspace, then by webhook; or
 *   its workspace's on this worker), spending no attempt and holding no connection. It waits in process
 *   while what it waits for keeps freeing slots here (TurnWaits, and WorkerShare's own), else parked in the
 *   queue's delayed set. The release that makes room gives the next in line its turn (at the host, a slot
 *   kept for it while two or more workspaces wait) and wakes it here, or promotes its job. No timer polls:
 *   a parked job's own time is when room is certain without any release (the host's first slot expiry,
 *   the breaker's end, the workspace's attempts here timing out), which only matters when the worker that
 *   should have woken it died.
 */
@Injectable()
export class Admission implements OnModuleInit, OnModuleDestroy {
  private readonly share: WorkerShare;
  private readonly turns: TurnWaits;
  /** Where a release tells the other workers of a turn it gave to a job running elsewhere. */
  private readonly wakeChannel: string;
  private readonly loopDelay = monitorEventLoopDelay({ resolution: 10 });
  /** This worker's mean event-loop delay (ms) over the last reading's period, and when it was read. */
  private loopDelayMs = 0;
  private loopDelayReadAt = 0;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly host: HostAdmission,
    private readonly queue: DeliveryQueue,
    private readonly caps: WebhookCaps,
    private readonly redis: RedisClients,
  ) {
    this.share = new WorkerShare(config.workerConcurrency);
    // A quarter of the slots may wait for turns, as a quarter is kept from any one workspace (WorkerShare).
    this.turns = new TurnWaits(
      Math.max(1, Math.floor(config.workerConcurrency / 4)),
      IDLE_WAIT_MS,
      LONGEST_TURN_WAIT_MS,
    );
    this.wakeChannel = `${config.queuePrefix}:admission:wake`;
    this.loopDelay.enable();
  }

  /** Not awaited: with Redis away the subscription waits for it (and is renewed on each reconnect). */
  onModuleInit(): void {
    const subscriber = this.redis.get('admission-wakes');
    subscriber.on('message', (_channel: string, jobId: string) => this.turns.wake(jobId));
    subscriber.subscribe(this.wakeChannel).catch(() => undefined);
  }

  onModuleDestroy(): void {
    this.loopDelay.disable();
  }

  /** Read at most every LOOP_DELAY_EVERY_MS, by the answers that need it. */
  private recentLoopDelayMs(): number {
    const now = Date.now();
    if (now - this.loopDelayReadAt >= LOOP_DELAY_EVERY_MS) {
      this.loopDelayMs = this.loopDelay.mean / 1e6 || 0;
      this.loopDelay.reset();
      this.loopDelayReadAt = now;
    }
    return this.loopDelayMs;
  }

  /** Admits the job's attempt, or parks the job in line and throws DelayedError (BullMQ's "moved"). */
  async enter(job: Job<DeliverJobData>, token: string | undefined): Promise<Ticket> {
    const { deliveryId, destination, webhookId, workspaceId } = job.data;
    const jobId = job.id ?? deliveryId;
    this.share.forget(workspaceId, jobId);
    if (!this.share.enter(workspaceId) && !(await this.share.waitTurn(workspaceId, IDLE_WAIT_MS))) {
      // Every attempt this workspace holds here ends within the delivery timeout: room by then.
      await job.moveToDelayed(Date.now() + this.config.deliveryTimeoutMs + 1_000, token);
      if (this.share.park(workspaceId, jobId, destination)) await this.promote(destination, jobId);
      throw new DelayedError();
    }
    const holder = `${deliveryId}:${token}`;
    let answer: number;
    try {
      let woken: Woken[];
      const cap = this.caps.capOf(job.data, job.timestamp);
      [answer, woken] = await this.host.enter({ destination, holder, jobId, webhookId, workspaceId, cap });
      void this.wake(woken).catch(() => undefined);
    } catch (error) {
      this.leaveShare(workspaceId);
      throw error;
    }
    if (answer === 0) return { destination, holder, webhookId, workspaceId, admittedAt: Date.now(), left: false };
    this.leaveShare(workspaceId);
    if (await this.turns.wait(jobId, destination)) return this.enter(job, token);
    await job.moveToDelayed(Math.max(answer, Date.now()) + Math.floor(Math.random() * 1_000), token);
    // Given its turn while it was still running here: that promote found nothing to move, so move itself.
    if (!(await this.host.inLine(destination, jobId).catch(() => true))) await this.promote(destination, jobId);
    throw new DelayedError();
  }

  /**
   * The receiver answered (or the send failed): frees the host's slot with what it showed, and the
   * workspace's share here, and wakes the next. Recording the attempt needs neither: no receiver can
   * hang it, so the workspace's next attempt need not wait for it.
   */
  answered(ticket: Ticket, attempted: Omit<Attempted, 'admittedAt'>): void {
    if (ticket.left) return;
    ticket.left = true;
    this.leaveShare(ticket.workspaceId);
    const { destination, holder, webhookId, admittedAt } = ticket;
    this.turns.released(destination);
    // A saturated worker is late to see every answer: that delay is ours, not the host's queueing.
    const latencyMs = Math.max(0, attempted.latencyMs - this.recentLoopDelayMs());
    void this.host
      .leave(destination, holder, webhookId, { ...attempted, latencyMs, admittedAt })
      .then((woken) => this.wake(woken))
      .catch(() => undefined);
  }

  /** Ends an admitted attempt: its slots, if no answer freed them (nothing was sent). */
  leave(ticket: Ticket): void {
    this.answered(ticket, { signal: 'other', latencyMs: 0 });
  }

  private leaveShare(workspaceId: string): void {
    const next = this.share.leave(workspaceId);
    if (next) void this.promote(next.destination, next.jobId);
  }

  /**
   * Wakes the woken waiters waiting here, and promotes the parked ones' jobs. One running elsewhere is told
   * on the wake channel (a waiter in another worker wakes; one still parking finds its turn by itself). A
   * job that no longer exists (its webhook was removed) gives its turn back at once, which wakes the next.
   */
  private async wake(woken: Woken[]): Promise<void> {
    await Promise.all(
      woken.map(async ({ destination, webhookId, jobId }) => {
        if (this.turns.wake(jobId) || (await this.promote(destination, jobId))) return;
        if (await this.exists(destination, jobId)) {
          // Running: most likely waiting in another worker's process, which this message wakes.
          await this.redis.get('admission').publish(this.wakeChannel, jobId);
          return;
        }
        const next = await this.host
          .leave(destination, `job:${jobId}`, webhookId, { signal: 'other', latencyMs: 0, admittedAt: 0 })
          .catch(() => []);
        await this.wake(next);
      }),
    );
  }

  /** Moves a parked job to its queue's wait list; false when it was not parked (running, or gone). */
  private promote(destination: string, jobId: string): Promise<boolean> {
    const queue = this.queue.queueOf(destination);
    return new Job(queue, DELIVER_JOB, {} as DeliverJobData, {}, jobId).promote().then(
      () => true,
      () => false,
    );
  }

  private exists(destination: string, jobId: string): Promise<boolean> {
    return this.queue
      .queueOf(destination)
      .getJob(jobId)
      .then(
        (job) => job !== undefined,
        () => true,
      );
  }
}
