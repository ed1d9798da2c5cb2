import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { DelayedError, Worker, type Job, type Queue } from 'bullmq';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { closeWorker } from '../../core/redis/close-worker.js';
import { Signal } from '../../core/signal.js';
import { QueueLayout } from '../../core/redis/queue-layout.js';
import { RedisClients } from '../../core/redis/redis.module.js';
import { HostStates } from '../host-state.js';
import { DELIVERY_QUEUE, HostWakes, type DrainJobData } from '../host-wakes.js';
import { DeliveryStore, type PickedDelivery } from '../store/delivery-store.js';
import { Admission, fewPickable, signalOf, type HostAdmission } from './admission/admission.js';
import { DeliveryAttemptService } from './delivery-attempt.service.js';
import type { SendResult } from './webhook-sender.js';

// While attempts are out and the host has room, the drain looks this often whether a delivery was made due
// meanwhile (the host's rewake mark, one Redis read): an answer that comes sooner looks at once.
const MARK_LOOK_MS = 100;
// Due deliveries this worker may not take now (their workspaces at their share here, or the worker full):
// looked at again when a socket comes back, or after this long.
const BLOCKED_LOOK_MS = 250;
// A state changed by answers is saved at most this often (a window is at least 100 ms anyway); a host
// drained in lanes shares it through Redis at this pace.
const SAVE_EVERY_MS = 100;
// Lane 0 of a host drained in lanes adds the other lanes' jobs again this often while it runs (a lane ends
// when its webhooks have nothing due), and looks again this often after it left while they have work due.
const LANES_LOOK_MS = 1_000;
// A lane taken by a worker that already holds its part of the host is passed on this often, for this long
// in a row, so another worker takes it: lanes are there to spread a host over workers.
const LANE_PASS_MS = 50;
const LANE_PASS_FOR_MS = 1_000;
// How often the count of workers consuming a queue (a CLIENT LIST) is taken again.
const CONSUMERS_EVERY_MS = 10_000;

/** One drain of one host (or of one lane of it): what it holds while its job runs. */
interface Drain {
  host: string;
  lane: number;
  admission: HostAdmission;
  /** Webhook -> its attempts in flight here, for its cap. */
  busy: Map<string, number>;
  /** Picked and not started yet: this worker's sockets were taken. Started before anything is picked again. */
  ready: PickedDelivery[];
  /** Deliveries with an attempt under way here: a pick before its claim leases it may return it again. */
  attempting: Set<string>;
  /** Per webhook, the due time of the last delivery picked (HOST_PICK's scan starts there). */
  after: Map<string, Date>;
  /** Lane 0: when it last added the other lanes' jobs (ms); Infinity while lanes it set are not saved yet. */
  lanesAt: number;
  /** Answers so far; a wait names the count it acted on (Signal). */
  answered: Signal;
  /** The earliest retry this drain's own attempts scheduled (ms), Infinity when none. */
  retryAt: number;
  savedAt: number;
  dirty: boolean;
  /** A lane above the host's lanes now: it ends once its attempts have. */
  retired: boolean;
  /** The drain has left: a retry its attempts schedule from now on wakes the host itself. */
  ended: boolean;
}

/**
 * The BullMQ consumer of host wakes (DESIGN 5, "Wakes and drains"), one Worker per shard (QUEUE_SHARDS). A
 * wake job is its host's lease while it runs (BullMQ renews its lock; a dead worker's job stalls and
 * another worker resumes the drain). A drain picks the host's due deliveries within admission, attempts
 * them (each claims, sends and records; records go to Postgres in batches), picks again as answers free
 * room, and when nothing more is due leaves its job delayed to the host's next due time (or completes it
 * when nothing is pending) by the protocol HostWakes states. A host whose limit is more than one worker
 * should hold (half its sockets) is drained in lanes by webhook, at most one per worker consuming its queue:
 * lane 0, the host's wake, adds a job per other lane, which any worker takes; each lane holds its share of
 * the host's limit and ends when its webhooks have nothing due (HostAdmission).
 */
@Injectable()
export class DeliveryWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('DeliveryWorker');
  private workers: Worker<DrainJobData>[] = [];
  private closing = false;
  /** Attempts not yet recorded, drains' ended or not: shutdown lets them record. */
  private readonly outstanding = new Set<Promise<void>>();
  /** Host -> drains of it running here (lanes). */
  private readonly draining = new Map<string, number>();
  /** Lane job -> when this worker began passing it on, and last did (passOn). */
  private readonly passing = new Map<string, { since: number; last: number }>();
  /** Shard queue -> workers consuming it, as last counted. */
  private readonly consumers = new Map<Queue<DrainJobData>, { count: number; at: number }>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly attempts: DeliveryAttemptService,
    private readonly admission: Admission,
    private readonly store: DeliveryStore,
    private readonly wakes: HostWakes,
    private readonly states: HostStates,
    private readonly redis: RedisClients,
  ) {}

  onApplicationBootstrap(): void {
    const layout = QueueLayout.of(this.config);
    this.workers = layout.deliveryPrefixes.map((prefix) => {
      const worker = new Worker<DrainJobData>(DELIVERY_QUEUE, (job, token) => this.drain(job, token), {
        connection: this.redis.connection('worker'),
        prefix,
        // Shown on each job it runs (processedBy, and in the queue dashboard): which worker drains a host.
        name: `${hostname()}:${process.pid}`,
        // Drains, not attempts: one per host with due work. Sockets are bounded by WORKER_CONCURRENCY
        // across them (WorkerShare); a drain waiting for its host holds none.
        concurrency: this.config.workerConcurrency * 2,
        lockDuration: this.config.deliveryLockMs,
        stalledInterval: this.config.deliveryLockMs,
        maxStalledCount: 1_000,
      });
      this.redis.logErrors('worker', worker);
      worker.on('completed', (job) => {
        if (!job.data.lane) void this.afterIdle(job.data.host);
      });
      worker.on('failed', (job, error) => this.logFailure(job, error));
      return worker;
    });
    this.logger.log(
      `Delivery worker started (concurrency ${this.config.workerConcurrency}, ${layout.shards} queue shard(s))`,
    );
  }

  /** Drains the host; returns when nothing is pending there, or leaves the job delayed (DelayedError). */
  async drain(job: Job<DrainJobData>, token?: string): Promise<string> {
    const { host, lane = 0 } = job.data;
    const drain: Drain = {
      host,
      lane,
      admission: this.admission.host(await this.states.load(host), lane),
      busy: new Map(),
      ready: [],
      attempting: new Set(),
      after: new Map(),
      lanesAt: 0,
      answered: new Signal(),
      retryAt: Infinity,
      savedAt: Date.now(),
      dirty: false,
      retired: false,
      ended: false,
    };
    if (lane >= drain.admission.lanes) return 'retired';
    if (drain.admission.lanes > 1 && (await this.passOn(job, token, drain.admission.lanes))) throw new DelayedError();
    if (lane === 0) {
      // Whatever was marked before this is committed: the first pick sees it (HostWakes' protocol).
      await this.wakes.clearRewake(host);
      // The lanes its limit calls for, saved before anything starts: lane 0 alone never holds the whole
      // limit of a host drained in lanes, and a lane that starts reads how many there are.
      if (this.admission.lanesFor(drain.admission.limit) > 1) await this.consumersOf(host);
      if (drain.admission.setLanes(this.lanesFor(drain))) await this.save(drain);
      await this.addLanes(drain);
    }
    this.draining.set(host, (this.draining.get(host) ?? 0) + 1);
    try {
      await this.run(drain);
    } finally {
      const here = (this.draining.get(host) ?? 1) - 1;
      if (here > 0) this.draining.set(host, here);
      else this.draining.delete(host);
      // Every attempt here is answered within its timeout, and the next drain must not find one still out;
      // their records need no host (a slow record would stall it): they finish on their own.
      while (drain.admission.inFlight > 0) await this.waitForAnswer(drain, Infinity, drain.answered.count);
      drain.ended = true;
      await this.save(drain).catch((error: Error) =>
        this.logger.debug(`Host ${host}'s state not saved: ${error.message}`),
      );
    }
    return this.leave(job, token, drain);
  }

  /**
   * A lane (lane 0 included: it ends and comes back as the others run) this worker would hold beyond its
   * part of the host (the lanes over the workers consuming) is left for another worker for a while: BullMQ
   * gives a job to whichever worker asks first, often the one that added it. Passed on for LANE_PASS_FOR_MS
   * in a row it is taken here; with one worker it always is.
   */
  private async passOn(job: Job<DrainJobData>, token: string | undefined, lanes: number): Promise<boolean> {
    const here = this.draining.get(job.data.host) ?? 0;
    if (here === 0) return false;
    const workers = await this.consumersOf(job.data.host);
    if (workers < 2 || here < Math.ceil(lanes / workers)) return false;
    const now = Date.now();
    const passed = this.passing.get(job.id!);
    // Back soon after its last pass: the same run of passes; otherwise (another worker took it since) a new one.
    const since = passed && now - passed.last < LANE_PASS_FOR_MS ? passed.since : now;
    if (now - since >= LANE_PASS_FOR_MS) {
      this.passing.delete(job.id!);
      return false;
    }
    if (this.passing.size > 1_000) {
      for (const [id, { last }] of this.passing) if (now - last > LANE_PASS_FOR_MS) this.passing.delete(id);
    }
    this.passing.set(job.id!, { since, last: now });
    await job.moveToDelayed(now + LANE_PASS_MS, token);
    return true;
  }

  /**
   * The lanes the host's limit calls for, at most one per worker consuming its queue (as last counted):
   * lanes spread a host over workers, and two lanes in one worker would only split its webhooks unevenly.
   * Workers are counted (a CLIENT LIST, every CONSUMERS_EVERY_MS at most) only for a host that calls for lanes.
   */
  private lanesFor({ host, admission }: Drain): number {
    const wanted = this.admission.lanesFor(admission.limit);
    if (wanted === 1) return 1;
    void this.consumersOf(host); // for the next call: this one takes the last count
    return Math.min(wanted, Math.max(1, this.consumers.get(this.wakes.queueOf(host))?.count ?? 1));
  }

  private async consumersOf(host: string): Promise<number> {
    const queue = this.wakes.queueOf(host);
    const known = this.consumers.get(queue);
    if (known && Date.now() - known.at < CONSUMERS_EVERY_MS) return known.count;
    const count = await queue.getWorkersCount().catch(() => known?.count ?? 1);
    this.consumers.set(queue, { count, at: Date.now() });
    return count;
  }

  private async run(drain: Drain): Promise<void> {
    const { admission } = drain;
    const share = this.admission.share;
    for (;;) {
      // What follows acts on the state as of now: an answer from here on wakes the waits below.
      const seen = drain.answered.count;
      void this.addLanes(drain);
      if (this.closing || drain.retired || admission.pausedUntil()) {
        drain.ready = [];
        if (admission.inFlight === 0) return;
        await this.waitForAnswer(drain, Infinity, seen);
        continue;
      }
      // The host's room is picked whole; what this worker's sockets cannot take now waits in `ready`, started
      // as sockets come back with no pick in between (a pick per socket would cost Postgres more than the send).
      const room = admission.room();
      let fullWorkspaces = false;
      if (drain.ready.length === 0 && room > 0 && share.free > 0) {
        const full = share.full();
        fullWorkspaces = full.length > 0;
        drain.ready = await this.store.pick({
          host: drain.host,
          room,
          busy: drain.busy,
          defaultCap: this.admission.defaultCap,
          fullWorkspaces: full,
          lane: drain.lane,
          lanes: admission.lanes,
          after: drain.after,
        });
      }
      const started = this.startReady(drain);
      if (room > 0 && started === room) continue; // all it picked went out, and more may be due: pick again
      if (drain.ready.length > 0) {
        await this.waitForSocket(drain, seen);
        continue;
      }
      if (admission.inFlight > 0) {
        // Until an answer frees room, or (with room) a delivery is made due here meanwhile.
        let woken: 'answer' | 'retry' | 'timeout';
        while ((woken = await this.waitForAnswer(drain, room > 0 ? MARK_LOOK_MS : Infinity, seen)) === 'timeout') {
          if (this.closing || (await this.marked(drain))) break;
        }
        // A fast host's answers come in bursts: a moment's wait lets one pick fill what several freed. The
        // default cap stands in for a webhook's own maxInFlight, unknown here: this only times the pick.
        const { defaultCap } = this.admission;
        if (
          woken === 'answer' &&
          fewPickable(admission.room(), admission.limit, defaultCap, drain.after.keys(), drain.busy)
        ) {
          await sleep(1);
        }
        continue;
      }
      // Nothing in flight here: done, unless due deliveries wait for this worker's sockets (all taken, or
      // their workspaces at their share), which one coming back may let through.
      const blocked =
        share.free === 0 ||
        (fullWorkspaces && ((await this.store.nextDue(drain.host))?.getTime() ?? Infinity) <= Date.now());
      if (!blocked) return;
      await this.waitForSocket(drain, seen);
    }
  }

  /** Starts what the drain picked, as far as the host's room and this worker's sockets allow; keeps the rest. */
  private startReady(drain: Drain): number {
    const kept: PickedDelivery[] = [];
    let started = 0;
    for (const delivery of drain.ready) {
      if (drain.attempting.has(delivery.id)) continue; // under way here already (picked again before its claim)
      if (drain.admission.room() > 0 && this.start(drain, delivery)) started++;
      else kept.push(delivery);
    }
    drain.ready = kept;
    // Sockets this drain could not use (its workspace at its share) go to the next drain in line.
    if (this.admission.share.free > 0) this.admission.share.passOn();
    return started;
  }

  /**
   * With every socket of this worker taken, waits in line for one (drains take them in turn, one per socket
   * that comes back, so a thousand waiting hosts do not all wake for each); otherwise (a workspace at its
   * share) looks again shortly. An answer to this drain's own attempts wakes it either way.
   */
  private async waitForSocket(drain: Drain, seen: number): Promise<void> {
    const share = this.admission.share;
    let timer: NodeJS.Timeout | undefined;
    const waits: Promise<unknown>[] = [new Promise((resolve) => (timer = setTimeout(resolve, BLOCKED_LOOK_MS)))];
    if (drain.admission.inFlight > 0) waits.push(drain.answered.after(seen));
    const turn = share.free === 0 ? share.line() : undefined;
    if (turn) waits.push(turn.promise);
    try {
      await Promise.race(waits);
    } finally {
      clearTimeout(timer);
      turn?.leave();
    }
  }

  /** Starts one attempt, if the workspace's share of this worker allows it now. */
  private start(drain: Drain, delivery: PickedDelivery): boolean {
    const { admission, busy } = drain;
    const share = this.admission.share;
    if (!share.enter(delivery.workspace_id)) return false;
    drain.attempting.add(delivery.id);
    // A webhook's deliveries are picked in due order: the next pick of it starts at this one.
    const after = drain.after.get(delivery.webhook_id);
    if (!after || delivery.next_attempt_at > after) drain.after.set(delivery.webhook_id, delivery.next_attempt_at);
    admission.started();
    busy.set(delivery.webhook_id, (busy.get(delivery.webhook_id) ?? 0) + 1);
    const startedAt = Date.now();
    let ended = false;
    // The host's slot and the socket are given back as soon as the receiver has answered: recording needs neither.
    const end = (send?: SendResult) => {
      if (ended) return;
      ended = true;
      share.leave(delivery.workspace_id);
      const left = busy.get(delivery.webhook_id)! - 1;
      if (left > 0) busy.set(delivery.webhook_id, left);
      else busy.delete(delivery.webhook_id);
      const signal = send?.unsent ? 'other' : signalOf(send);
      const latencyMs = send ? this.admission.latencyOf(send) : 0;
      if (admission.answered({ signal, latencyMs, startedAt })) drain.dirty = true;
      this.saveSoon(drain);
      drain.answered.fire();
    };
    const attempt = this.attempts
      .run(
        {
          deliveryId: delivery.id,
          createdAt: delivery.created_at,
          trigger: delivery.next_trigger,
          host: drain.host,
          url: delivery.url,
          webhookId: delivery.webhook_id,
          workspaceId: delivery.workspace_id,
          trace: delivery.trace,
        },
        end,
      )
      .then(
        (result) => {
          if (result.status !== 'pending') return;
          const at = Date.now() + result.delayMs;
          drain.retryAt = Math.min(drain.retryAt, at);
          // Recorded after its drain left (whose wake may be later): the retry wakes its host.
          if (drain.ended) void this.wakes.wake([{ host: drain.host, at: new Date(at) }]);
        },
        (error: Error) =>
          this.logger.warn({
            msg: 'Delivery attempt failed before it was recorded; its lease runs out and it is attempted again',
            deliveryId: delivery.id,
            error: error.message,
          }),
      )
      .finally(() => {
        end();
        drain.attempting.delete(delivery.id);
        this.outstanding.delete(attempt);
      });
    this.outstanding.add(attempt);
    return true;
  }

  /** Saves the lane's state, merged with the other lanes' (HostStates). */
  private async save({ host, lane, admission }: Drain): Promise<void> {
    admission.base = await this.states.save(host, admission.stored(), lane, admission.base);
  }

  /** Waits for an answer after the `seen`th (at once when one came since), the drain's own next retry falling due, or `ms`. */
  private async waitForAnswer(drain: Drain, ms: number, seen: number): Promise<'answer' | 'retry' | 'timeout'> {
    const toRetry = Math.max(0, drain.retryAt - Date.now());
    const until = Math.min(ms, toRetry);
    const answered = await drain.answered.within(seen, until);
    if (drain.retryAt <= Date.now()) drain.retryAt = Infinity;
    return answered ? 'answer' : until === toRetry ? 'retry' : 'timeout';
  }

  /**
   * Whether a delivery was made due here since the drain last looked (the mark is taken: a pick follows).
   * The host's one mark is lane 0's to take: another lane with room looks again each time it is asked.
   */
  private async marked(drain: Drain): Promise<boolean> {
    if (drain.lane > 0) return true;
    const mark = await this.wakes.takeRewake(drain.host).catch(() => null);
    const due = mark !== null && mark.getTime() <= Date.now();
    // It may be another lane's webhook's, and that lane may have ended: its job again.
    if (due && drain.lanesAt !== Infinity) drain.lanesAt = 0;
    return due;
  }

  /**
   * Lane 0 (re)adds the other lanes' jobs (one per lane: a running lane's add is a no-op) every LANES_LOOK_MS,
   * once its own attempts are within its part of the limit: lanes started beside lane 0's attempts beyond
   * its part (the lanes just grew) would put more than the limit at the host.
   */
  private async addLanes(drain: Drain): Promise<void> {
    const { admission, host } = drain;
    if (drain.lane > 0 || admission.lanes < 2 || !admission.withinPart()) return;
    if (Date.now() - drain.lanesAt < LANES_LOOK_MS) return;
    drain.lanesAt = Date.now();
    await this.wakes
      .addLanes(host, admission.lanes)
      .catch((error: Error) => this.logger.debug(`Host ${host}'s lanes not added: ${error.message}`));
  }

  /**
   * Saves what the answers changed, at most every SAVE_EVERY_MS. Lane 0 also sets the lanes the limit calls
   * for (their jobs are added once that is saved); with several lanes each then takes what the others saved
   * (last write wins).
   */
  private saveSoon(drain: Drain): void {
    const now = Date.now();
    const { admission, host, lane } = drain;
    if (now - drain.savedAt < SAVE_EVERY_MS) return;
    if (lane === 0 && admission.setLanes(this.lanesFor(drain))) {
      drain.dirty = true;
      drain.lanesAt = Infinity;
    }
    // Alone at its host, a drain only saves; a lane also takes what the others saved.
    const shared = lane > 0 || admission.lanes > 1;
    if (!drain.dirty && !shared) return;
    drain.savedAt = now;
    const saved = drain.dirty ? this.save(drain) : Promise.resolve();
    drain.dirty = false;
    const lanesSaved = () => (drain.lanesAt = 0);
    if (drain.lanesAt === Infinity) void saved.then(lanesSaved, lanesSaved);
    const failed = (error: Error) => this.logger.debug(`Host ${host}'s state not shared: ${error.message}`);
    if (!shared) return void saved.catch(failed);
    void saved
      .then(() => this.states.load(host))
      .then((stored) => {
        admission.follow(stored);
        if (lane > 0 && lane >= admission.lanes) drain.retired = true;
      })
      .catch(failed);
  }

  /**
   * The drain's end (HostWakes' protocol): its job delayed to the host's next due time (the breaker's end
   * when paused), then the mark taken, and the host woken sooner when a delivery was made due meanwhile;
   * with nothing pending the job completes, and its completion takes the mark (afterIdle).
   */
  private async leave(job: Job<DrainJobData>, token: string | undefined, drain: Drain): Promise<string> {
    const { host, admission } = drain;
    // Another lane's end: lane 0 holds the host's wake.
    if (drain.lane > 0) return 'idle';
    const next = await this.store.nextDue(host);
    if (next === null && !admission.pausedUntil()) return 'idle';
    // With lanes, the others' deliveries may be due now: lane 0 looks again shortly, adding their jobs.
    const lanesLook = admission.lanes > 1 ? Date.now() + LANES_LOOK_MS : 0;
    // Due now yet not taken (another drain's lease ran out meanwhile, say): not at once, so no drain spins.
    const soonest = Date.now() + (next !== null && next.getTime() <= Date.now() ? MARK_LOOK_MS : 1);
    const at = Math.max(next?.getTime() ?? 0, admission.pausedUntil(), lanesLook, soonest);
    try {
      await job.moveToDelayed(at, token);
    } catch (error) {
      // The job is gone (Redis restarted, or its lock was lost): a new wake, at the same time.
      this.logger.warn(`Host ${host}'s wake could not be moved (${(error as Error).message}); waking it anew`);
      await this.wakes.wake([{ host, at: new Date(at) }]);
      return 'rewoken';
    }
    const mark = await this.wakes.takeRewake(host).catch(() => null);
    if (mark !== null && mark.getTime() < at) {
      await this.wakes.wake([{ host, at: new Date(Math.max(mark.getTime(), admission.pausedUntil())) }]);
    }
    throw new DelayedError();
  }

  /** A drain that found nothing pending completed its job: a delivery made due meanwhile left a mark. */
  private async afterIdle(host: string): Promise<void> {
    const mark = await this.wakes.takeRewake(host).catch(() => null);
    if (mark !== null) await this.wakes.wake([{ host, at: mark }]);
  }

  /** A receiver's failure is its attempt's record; this is Postgres or Redis trouble, retried shortly. */
  private logFailure(job: Job<DrainJobData> | undefined, error: Error): void {
    this.logger.warn({
      msg: 'Host drain failed; its wake runs again shortly',
      host: job?.data.host,
      error: error.message,
    });
  }

  /** Stops taking wakes and lets the drains end their attempts in flight, each bounded by its timeout. */
  async onModuleDestroy(): Promise<void> {
    this.closing = true;
    const grace = this.config.deliveryTimeoutMs + 2_000;
    await Promise.all(this.workers.map((worker) => closeWorker(worker, grace, this.logger)));
    // Records are a Postgres round trip away; one that cannot land leaves its lease to run out.
    await Promise.race([Promise.allSettled([...this.outstanding]), sleep(5_000)]);
  }
}
