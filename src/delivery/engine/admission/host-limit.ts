/**
 * The next concurrency limit of a host, from one window of what its attempts showed.
 *
 * The rule: AIMD on overload signals, a latency gradient against the recent minimum otherwise, and a
 * slow start. A window lasts one recent-minimum latency (at least 100 ms): TCP's one update per round
 * trip. It also holds ten answers, or the limit's worth when that is fewer (Netflix's WindowedLimit
 * windowSize): a host that sees a few attempts a second is judged on enough of them, every few seconds,
 * rather than on each answer alone. Latency is that of 2xx answers only: an error may come faster or
 * slower than the host's real work (a removed hook's 410 at once beside live hooks' 200s at the same
 * host), so it would mislead the minimum.
 * - A window of answers none of which is 2xx (and no overload signal) says the host answers, not how
 *   loaded it is: a limit below DELIVERY_HOST_INITIAL_LIMIT grows back towards it by the usual step, and
 *   no further (a receiver that rejects everything is not held at a cut limit for good, and one that fails
 *   fast under load gets no more than a new host would).
 * - A 429, a 503, a refused or reset connection or a timeout halves the limit at once (TCP's
 *   multiplicative decrease: the host said it is overloaded, so there is no waiting for a window of
 *   latencies); once per window, as attempts begun before the cut say nothing of the new limit. A
 *   timeout while the host answered others at its usual latency (since the attempt was admitted, which
 *   the Lua checks, or in the same window) is that request's own (a receiver that hangs on some
 *   requests), not the host's load: the limit holds, and the breaker does not count it.
 * - Else the window's mean 2xx latency is compared to the host's recent minimum (Vegas' no-load
 *   latency, Envoy's minRTT). Well above it (twice it, plus a slack for our own event loop, which a
 *   saturated worker adds to every answer's latency), the host is queueing: the limit is cut in proportion, by at most half
 *   (Gradient2's and Envoy's gradient).
 * - Near the minimum, and the limit in use, it grows. A host never seen overloaded, answering within a
 *   fifth of its minimum (plus half the slack), gains a slot per such answer as it comes (TCP's slow start, +1 per ACK, which
 *   doubles per round trip; the Lua that frees the slot adds it, so the window's decision holds): an
 *   automation platform's host reaches hundreds within a second or two. Otherwise, up to one and a half
 *   times the minimum, it grows by the limit's square root per window (Envoy's and Gradient2's
 *   headroom), slower the higher it is. Between growing and queueing it holds.
 * - Growth remembers the limit of the last overload or latency cut (CUBIC's Wmax, TCP's ssthresh): no
 *   slow start while it is known, and the step shrinks in proportion to the distance to it, down to 1
 *   per window near it, on both sides, so a host that answers 503 above N open is probed past N once
 *   in many windows rather than every other one; past twice that limit it is forgotten.
 * - The recent minimum follows a host that became slower for good: a window whose fastest answer is
 *   above it, at no more load than the minimum was taken at, raises it by a fraction of the difference.
 *   At a higher load the slower answers may be our own queueing, and following them would let the
 *   limit creep up with the latency it causes; a host slower for good is cut by the gradient until the
 *   load is down to that level, and followed then. (Envoy measures the minimum again instead, by
 *   pausing the host down to a few requests, which costs throughput at every remeasure.)
 */

/** Why a limit changed: grown, cut for an overload signal or for latency, or set by the breaker. */
export type LimitReason = 'growth' | 'latency' | '429' | '503' | 'refused' | 'reset' | 'timeout' | 'paused';

/** The overload signals, each of which cuts at once. */
export type DropReason = '429' | '503' | 'refused' | 'reset' | 'timeout';

export interface HostWindow {
  limit: number;
  /** Most attempts in flight at the host during the window. */
  peakInFlight: number;
  /** 2xx answers in the window, the sum and the least of their latencies (ms). */
  samples: number;
  /** Other answers in the window (any status but 2xx, 429 and 503): the host answered, at no known load. */
  otherAnswers: number;
  latencySumMs: number;
  latencyMinMs: number;
  /** The overload signal that closed the window, if one did. */
  drop: DropReason | null;
  /** The host's recent minimum latency, null before its first 2xx. */
  minRttMs: number | null;
  /** The most attempts in flight in the window the recent minimum was taken in. */
  minRttLoad: number | null;
  /** The limit at the last overload signal, null when none is remembered. */
  ceiling: number | null;
}

export interface LimitBounds {
  initial: number;
  min: number;
  max: number;
}

export interface LimitDecision {
  limit: number;
  minRttMs: number | null;
  minRttLoad: number | null;
  ceiling: number | null;
  /** Null when the limit stayed as it was. */
  reason: LimitReason | null;
}

/** The mean latency above which the host is queueing: this many times its recent minimum, plus the slack. */
const LATENCY_CUT_RATIO = 2;
/** The mean latency under which the limit may grow, plus the slack. */
const LATENCY_GROW_RATIO = 1.5;
/** The mean latency under which a host never seen overloaded doubles its limit, plus half the slack. */
const SLOW_START_RATIO = 1.2;
/** Our own delays (event loop, batching) that a 1 ms receiver's latency must not be mistaken for. */
const LATENCY_SLACK_MS = 100;
/** The multiplicative decrease on an overload signal, and the deepest latency cut. */
const BACKOFF = 0.5;
/** How much of the difference a slower window's fastest answer moves the recent minimum up. */
const MIN_RTT_DRIFT = 1 / 16;

const clamp = (limit: number, { min, max }: LimitBounds) => Math.min(max, Math.max(min, Math.floor(limit)));

/**
 * A faster answer is the new minimum at once. A slower window moves it up only when its load was no
 * more than the minimum's (or its answers are all within the slack): at a higher load the slower
 * answers may be our own queueing at the host (following them would let the limit creep up with the
 * latency it causes).
 */
function nextMinRtt(window: HostWindow): Pick<LimitDecision, 'minRttMs' | 'minRttLoad'> {
  const { latencyMinMs: fastest, minRttMs: recent, minRttLoad: load, peakInFlight } = window;
  if (window.samples === 0) return { minRttMs: recent, minRttLoad: load };
  if (recent === null || fastest < recent) return { minRttMs: fastest, minRttLoad: peakInFlight };
  if (fastest === recent) return { minRttMs: recent, minRttLoad: Math.max(load ?? 0, peakInFlight) };
  // Under the slack, a host's differences are our own event loop's, not its queueing: followed at any load.
  if (load !== null && peakInFlight > load && fastest > LATENCY_SLACK_MS) return { minRttMs: recent, minRttLoad: load };
  return { minRttMs: recent + (fastest - recent) * MIN_RTT_DRIFT, minRttLoad: load ?? peakInFlight };
}

/** The growth step: the limit's square root, shrunk near the last overload's limit (at least 1). */
export function growthStep(limit: number, ceiling: number | null): number {
  const step = Math.sqrt(limit);
  if (ceiling === null) return Math.ceil(step);
  return Math.max(1, Math.round((step * Math.abs(ceiling - limit)) / ceiling));
}

export function decideLimit(window: HostWindow, bounds: LimitBounds): LimitDecision {
  const minimum = nextMinRtt(window);
  const decided = (limit: number, reason: LimitReason, ceiling = window.ceiling): LimitDecision => {
    const next = clamp(limit, bounds);
    const kept = ceiling !== null && next < ceiling * 2 ? ceiling : null;
    return { limit: next, ...minimum, ceiling: kept, reason: next === window.limit ? null : reason };
  };
  // Measured against the minimum as it was (or this window's, when faster), before it follows a slower host.
  const baseline = Math.min(window.minRttMs ?? window.latencyMinMs, window.latencyMinMs);
  const within = (ratio: number, slack: number) => baseline * ratio + slack;
  const meanMs = window.latencySumMs / window.samples;
  const queueing = within(LATENCY_CUT_RATIO, LATENCY_SLACK_MS);
  const prompt = window.samples > 0 && meanMs <= queueing;
  if (window.drop === 'timeout' && prompt) return decided(window.limit, 'timeout');
  if (window.drop) return decided(window.limit * BACKOFF, window.drop, window.limit);
  if (window.samples === 0) {
    if (window.otherAnswers === 0 || window.limit >= bounds.initial) return decided(window.limit, 'growth');
    const step = growthStep(window.limit, window.ceiling);
    return decided(Math.min(bounds.initial, window.limit + step), 'growth');
  }
  if (meanMs > queueing) {
    const cut = Math.min(window.limit - 1, window.limit * Math.max(BACKOFF, queueing / meanMs));
    return decided(cut, 'latency', window.limit);
  }
  // Growing a limit the host's load does not reach would let a later burst through unmeasured.
  if (window.peakInFlight * 2 < window.limit) return decided(window.limit, 'growth');
  // Slow start: each prompt answer added a slot as it came (host-admission.scripts.ts), doubling per round trip.
  if (window.ceiling === null && meanMs <= within(SLOW_START_RATIO, LATENCY_SLACK_MS / 2)) {
    return decided(window.limit, 'growth');
  }
  if (meanMs <= within(LATENCY_GROW_RATIO, LATENCY_SLACK_MS)) {
    return decided(window.limit + growthStep(window.limit, window.ceiling), 'growth');
  }
  return decided(window.limit, 'growth');
}
