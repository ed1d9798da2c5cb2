import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { AppConfig } from '../../../core/config/config.js';
import { APP_CONFIG } from '../../../core/config/config.module.js';
import type { StoredHost } from '../../host-state.js';
import type { SendResult } from '../webhook-sender.js';
import { decideLimit, type DropReason, type LimitBounds } from './host-limit.js';
import { WorkerShare } from './worker-share.js';

/**
 * What an attempt showed of its host: a 2xx (`ok`, its latency a sample), another answer, an overload
 * signal (DropReason), or nothing (`other`: not sent, or failed in a way that says nothing of the host).
 */
export type HostSignal = 'ok' | 'answered' | DropReason | 'other';

/** What a finished attempt tells its host's admission. */
export interface Answer {
  signal: HostSignal;
  latencyMs: number;
  /** When the attempt started (ms). */
  startedAt: number;
}

export function signalOf(send: SendResult | undefined): HostSignal {
  if (!send) return 'other';
  const { statusCode, failure } = send;
  if (statusCode !== null) {
    if (statusCode >= 200 && statusCode < 300) return 'ok';
    return statusCode === 429 ? '429' : statusCode === 503 ? '503' : 'answered';
  }
  return failure ?? 'other';
}

// A window is at least this long, so a 1 ms receiver's limit does not move on every batch.
const MIN_WINDOW_MS = 100;
// And holds at least this many answers (or the limit's worth, when lower): Netflix's WindowedLimit windowSize.
const MIN_SAMPLES = 10;
const DROPS = new Set<HostSignal>(['429', '503', 'refused', 'reset', 'timeout']);
// How often this worker's event-loop delay, which every answer's measured latency includes, is read.
const LOOP_DELAY_EVERY_MS = 500;

interface Window {
  start: number;
  samples: number;
  other: number;
  sum: number;
  min: number;
  peak: number;
}

/** Lanes a host with this limit is drained in: one per `perLane` of its limit, at most MAX_LANES. */
export const MAX_LANES = 8;
// A lane holds at least this much of a host's limit: fewer is no reason to spread a host over workers.
const MIN_LANE = 50;
export const lanesFor = (limit: number, perLane: number): number =>
  Math.max(1, Math.min(MAX_LANES, Math.ceil(limit / Math.max(1, perLane))));

/** Lane `lane`'s part of `total` split over `lanes`: the parts add up to the total. */
export const laneShare = (total: number, lane: number, lanes: number): number =>
  Math.floor(total / lanes) + (lane < total % lanes ? 1 : 0);

/**
 * Whether a pick now would fill less than a quarter of what the host takes at once, so that a moment's wait
 * for more answers makes one pick of what several would: the host's room, within the in-flight caps of the
 * webhooks the drain sends to (`cap` each, `busy` in flight). A host of a few webhooks at their caps frees
 * one slot per answer, however large its own limit, and a pick per answer costs Postgres more than its sends.
 */
export function fewPickable(
  room: number,
  limit: number,
  cap: number,
  webhooks: Iterable<string>,
  busy: ReadonlyMap<string, number>,
): boolean {
  let free = 0;
  let count = 0;
  for (const webhook of webhooks) {
    free += Math.max(0, cap - (busy.get(webhook) ?? 0));
    count++;
  }
  const pickable = count > 0 ? Math.min(room, free) : room;
  const most = count > 0 ? Math.min(limit, count * cap) : limit;
  return pickable < Math.max(2, most / 4);
}

/**
 * One host's admission while a drain holds it (DESIGN 5, the rules): the adaptive limit (decideLimit states
 * the rule; this feeds it one window at a time and grows it per prompt answer in slow start) and the
 * breaker, its other end. It starts from what the host's last drain left (HostStates) and the drain saves
 * it back when it changes. A host whose limit is more than one worker should hold is drained in lanes by
 * webhook (several workers), each lane holding its share of the limit; lane 0, the host's wake, decides
 * the limit, the breaker and the number of lanes from its own answers (a sample of the host's), and the
 * other lanes follow what it saves. In flight counts this lane's attempts.
 */
export class HostAdmission {
  inFlight = 0;
  private state: StoredHost;
  private window: Window;
  /** The last prompt 2xx answer (ms): a timeout of an attempt started before it is that request's own. */
  private promptAt = 0;
  /** The last cut (ms): attempts started before it say nothing of the cut limit. */
  private cutAt = 0;
  /** Timeouts in a row, towards opening the breaker. */
  private timeouts = 0;
  /** The limit as the host's state last had it (loaded, followed or saved): what this lane's growth is from. */
  base: number;

  constructor(
    stored: StoredHost,
    private readonly bounds: LimitBounds,
    private readonly breaker: { threshold: number; cooldownMs: number },
    readonly lane = 0,
  ) {
    this.state = { ...stored, limit: Math.min(bounds.max, Math.max(bounds.min, stored.limit)) };
    this.base = stored.limit;
    this.window = this.fresh(Date.now());
  }

  get limit(): number {
    return this.state.limit;
  }

  get lanes(): number {
    return Math.max(1, this.state.lanes);
  }

  /** Lane 0 sets how many lanes drain the host; true when that changed. */
  setLanes(lanes: number): boolean {
    if (lanes === this.state.lanes) return false;
    this.state = { ...this.state, lanes };
    return true;
  }

  /** Another lane takes what lane 0 last saved: the limit, the breaker, the lanes. */
  follow(stored: StoredHost): void {
    this.state = { ...stored, limit: Math.min(this.bounds.max, Math.max(this.bounds.min, stored.limit)) };
    this.base = stored.limit;
  }

  /** This lane's part of the limit (all of it with one lane). */
  private get share(): number {
    return laneShare(this.state.limit, this.lane, this.lanes);
  }

  /** The host's attempts in flight, as this lane can tell: its own, times the lanes. */
  private get hostInFlight(): number {
    return this.inFlight * this.lanes;
  }

  /** When the breaker's pause ends (ms), or 0 when the host is not paused. */
  pausedUntil(now = Date.now()): number {
    return this.state.openUntil > now ? this.state.openUntil : 0;
  }

  /** Whether this lane's attempts in flight are within its part of the limit (the lanes may just have grown). */
  withinPart(): boolean {
    return this.inFlight <= this.share;
  }

  /** How many more attempts may start now. */
  room(now = Date.now()): number {
    return this.pausedUntil(now) ? 0 : Math.max(0, this.share - this.inFlight);
  }

  started(): void {
    this.inFlight++;
    this.window.peak = Math.max(this.window.peak, this.hostInFlight);
  }

  /** An attempt ended; true when the limit or the breaker changed (the drain saves the state then). */
  answered({ signal, latencyMs, startedAt }: Answer, now = Date.now()): boolean {
    this.inFlight--;
    // A timeout while the host answered others promptly is that request's own (a receiver that hangs on
    // some requests), not the host's load: it neither cuts the limit nor counts towards the breaker.
    const excused = signal === 'timeout' && this.promptAt >= startedAt;
    let changed = false;
    if (signal === 'ok' || signal === 'answered' || signal === '429' || signal === '503') {
      this.timeouts = 0;
      if (this.state.openUntil > 0 && this.state.openUntil <= now) {
        this.state = { ...this.state, openUntil: 0, cooldownMs: 0 };
        changed = true;
      }
    } else if (signal === 'timeout' && !excused && this.breaker.threshold > 0 && this.pausedUntil(now) === 0) {
      if (++this.timeouts >= this.breaker.threshold || this.state.openUntil > 0) return this.pause(now);
    }
    return this.sample(signal, latencyMs, startedAt, excused, now) || changed;
  }

  /** The state to save. */
  stored(): StoredHost {
    return { ...this.state, inFlight: this.inFlight };
  }

  /** Opens the breaker: paused for the cooldown (doubling while its probes fail), then from the least limit. */
  private pause(now: number): boolean {
    const { cooldownMs } = this.breaker;
    const cooldown = this.state.openUntil > 0 ? Math.min(this.state.cooldownMs * 2, cooldownMs * 32) : cooldownMs;
    this.timeouts = 0;
    this.cutAt = now;
    this.window = this.fresh(now);
    this.state = {
      ...this.state,
      openUntil: now + cooldown,
      cooldownMs: cooldown,
      limit: this.bounds.min,
      lastChange: { reason: 'paused', at: now },
    };
    return true;
  }

  private sample(signal: HostSignal, latencyMs: number, startedAt: number, excused: boolean, now: number): boolean {
    const w = this.window;
    if (DROPS.has(signal)) {
      if (excused || startedAt < this.cutAt) return false;
      return this.close(signal as DropReason, now);
    }
    if (signal === 'answered') {
      w.other++;
      return this.full(now) && this.close(null, now);
    }
    if (signal !== 'ok') return false;
    w.samples++;
    w.sum += latencyMs;
    w.min = Math.min(w.min, latencyMs);
    const fastest = Math.min(this.state.minRttMs ?? latencyMs, w.min);
    // Prompt (under decideLimit's queueing line): the host has room, whatever hangs beside this answer.
    if (latencyMs <= fastest * 2 + 100) this.promptAt = now;
    let grown = false;
    // Slow start, per answer (TCP's cwnd + 1 per ACK): a host never seen overloaded, answering within a
    // fifth of its minimum plus 50 ms, its limit in use, gains a slot per answer: doubling per round trip.
    const { limit, ceiling } = this.state;
    const inUse = (this.inFlight + 1) * this.lanes * 2 >= limit;
    if (ceiling === null && limit < this.bounds.max && inUse && latencyMs <= fastest * 1.2 + 50) {
      this.state = { ...this.state, limit: limit + 1, lastChange: { reason: 'growth', at: now } };
      grown = true;
    }
    return (this.full(now) && this.close(null, now)) || grown;
  }

  /** A window closes once it is a recent minimum latency old (at least MIN_WINDOW_MS) and holds enough answers. */
  private full(now: number): boolean {
    const w = this.window;
    if (w.samples + w.other < Math.min(MIN_SAMPLES, this.state.limit)) return false;
    return now - w.start >= Math.max(this.state.minRttMs ?? 0, MIN_WINDOW_MS);
  }

  private close(drop: DropReason | null, now: number): boolean {
    const w = this.window;
    const decision = decideLimit(
      {
        limit: this.state.limit,
        peakInFlight: w.peak,
        samples: w.samples,
        otherAnswers: w.other,
        latencySumMs: w.sum,
        latencyMinMs: w.samples > 0 ? w.min : 0,
        drop,
        minRttMs: this.state.minRttMs,
        minRttLoad: this.state.minRttLoad,
        ceiling: this.state.ceiling,
      },
      this.bounds,
    );
    if (drop) this.cutAt = now;
    this.window = this.fresh(now);
    this.state = {
      ...this.state,
      limit: decision.limit,
      minRttMs: decision.minRttMs,
      minRttLoad: decision.minRttLoad,
      ceiling: decision.ceiling,
      lastChange: decision.reason ? { reason: decision.reason, at: now } : this.state.lastChange,
    };
    return true;
  }

  private fresh(now: number): Window {
    return { start: now, samples: 0, other: 0, sum: 0, min: Infinity, peak: this.hostInFlight };
  }
}

/**
 * Admission, the rules (DESIGN 5), with a host's drain as their only user:
 * - Per webhook: at most its `maxInFlight` (else DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK) attempts in flight;
 *   the drain's pick leaves a webhook at its cap out.
 * - Per host: the adaptive limit and the breaker (HostAdmission), one drain per host holding them.
 * - Fairness at a host: the pick takes due deliveries in turn by workspace, then by a workspace's webhooks.
 * - Across hosts: each workspace's share of this worker's sockets (WorkerShare).
 * - Waiting costs nothing: a delivery that waits is a row in Postgres; a host that waits has one delayed
 *   wake (its next due time, or the breaker's end).
 */
@Injectable()
export class Admission implements OnModuleDestroy {
  readonly share: WorkerShare;
  private readonly loopDelay = monitorEventLoopDelay({ resolution: 10 });
  private loopDelayMs = 0;
  private loopDelayReadAt = 0;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    this.share = new WorkerShare(config.workerConcurrency);
    this.loopDelay.enable();
  }

  onModuleDestroy(): void {
    this.loopDelay.disable();
  }

  /** A drain's admission at its host (in lane `lane`), from what the host's last drain left. */
  host(stored: StoredHost, lane = 0): HostAdmission {
    return new HostAdmission(stored, this.config.hostLimit, this.config.breaker, lane);
  }

  /** How many lanes a host with this limit is drained in: what one worker should hold is half its sockets. */
  lanesFor(limit: number): number {
    return lanesFor(limit, Math.max(MIN_LANE, Math.floor(this.config.workerConcurrency / 2)));
  }

  /** The default per-webhook cap. */
  get defaultCap(): number {
    return this.config.maxInFlightPerWebhook || 1_000_000;
  }

  /** The answer's latency less this worker's own event-loop delay: a saturated worker is late to see every answer. */
  latencyOf(send: SendResult): number {
    const now = Date.now();
    if (now - this.loopDelayReadAt >= LOOP_DELAY_EVERY_MS) {
      this.loopDelayMs = this.loopDelay.mean / 1e6 || 0;
      this.loopDelay.reset();
      this.loopDelayReadAt = now;
    }
    return Math.max(0, send.durationMs - this.loopDelayMs);
  }
}
