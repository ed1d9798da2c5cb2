import type { StoredHost } from '../../host-state.js';
import { fewPickable, HostAdmission, laneShare, lanesFor, type HostSignal } from './admission.js';

const BOUNDS = { initial: 20, min: 1, max: 1000 };
const BREAKER = { threshold: 3, cooldownMs: 1_000 };
const T0 = 1_000_000;

const fresh = (over: Partial<StoredHost> = {}): StoredHost => ({
  limit: 20,
  minRttMs: null,
  minRttLoad: null,
  ceiling: null,
  lastChange: null,
  openUntil: 0,
  cooldownMs: 0,
  inFlight: 0,
  lanes: 1,
  ...over,
});

/** Starts `n` attempts at `at`, and ends each with `signal` after `latencyMs`; returns the host. */
function attempts(host: HostAdmission, n: number, signal: HostSignal, at: number, latencyMs: number): HostAdmission {
  for (let i = 0; i < n; i++) host.started();
  for (let i = 0; i < n; i++) host.answered({ signal, latencyMs, startedAt: at }, at + latencyMs);
  return host;
}

describe('HostAdmission (the host rules of DESIGN 5)', () => {
  it('admits up to the limit: room is the limit less what is in flight', () => {
    const host = new HostAdmission(fresh(), BOUNDS, BREAKER);
    for (let i = 0; i < 15; i++) host.started();
    expect(host.room(T0)).toBe(5);
    for (let i = 0; i < 5; i++) host.started();
    expect(host.room(T0)).toBe(0);
  });

  it('grows by one slot per prompt answer while the host was never overloaded and its limit is in use (slow start)', () => {
    const host = new HostAdmission(fresh({ minRttMs: 50 }), BOUNDS, BREAKER);
    for (let i = 0; i < 20; i++) host.started();
    // A steady flow: each answer's room is taken again at once, so the limit stays in use.
    for (let i = 0; i < 20; i++) {
      host.answered({ signal: 'ok', latencyMs: 50, startedAt: T0 }, T0 + 50);
      host.started();
    }
    expect(host.limit).toBe(40);
    expect(host.stored().lastChange).toEqual({ reason: 'growth', at: T0 + 50 });
    const idle = attempts(new HostAdmission(fresh({ minRttMs: 50 }), BOUNDS, BREAKER), 2, 'ok', T0, 50);
    expect(idle.limit).toBe(20); // two open of twenty: a limit the load does not reach is not grown
    const cut = attempts(new HostAdmission(fresh({ minRttMs: 50, ceiling: 40 }), BOUNDS, BREAKER), 5, 'ok', T0, 50);
    expect(cut.limit).toBe(20);
  });

  it('is cut at once by a 503 of an attempt started after the last cut, not by those started before', () => {
    const host = new HostAdmission(fresh({ ceiling: 40 }), BOUNDS, BREAKER);
    for (let i = 0; i < 3; i++) host.started();
    expect(host.answered({ signal: '503', latencyMs: 5, startedAt: T0 }, T0 + 5)).toBe(true);
    expect(host.limit).toBe(10);
    expect(host.stored().lastChange).toEqual({ reason: '503', at: T0 + 5 });
    host.answered({ signal: '503', latencyMs: 5, startedAt: T0 }, T0 + 6); // began before the cut
    expect(host.limit).toBe(10);
    host.answered({ signal: '503', latencyMs: 5, startedAt: T0 + 10 }, T0 + 20);
    expect(host.limit).toBe(5);
  });

  it('keeps a window open until it holds the limit’s worth of answers (at most 10), however old it is', () => {
    const host = new HostAdmission(fresh({ limit: 5, ceiling: 5, minRttMs: 100 }), BOUNDS, BREAKER);
    for (let i = 0; i < 4; i++) {
      host.started();
      host.answered({ signal: 'answered', latencyMs: 1, startedAt: T0 }, T0 + 10_000);
    }
    expect(host.stored().lastChange).toBeNull();
    host.started();
    host.answered({ signal: 'answered', latencyMs: 1, startedAt: T0 }, T0 + 10_000);
    expect(host.limit).toBe(5); // closed: answers but no 2xx leave a limit at or above the initial as it is
  });

  it('opens the breaker on timeouts in a row: paused for the cooldown, from the least limit', () => {
    const host = new HostAdmission(fresh(), BOUNDS, BREAKER);
    for (let i = 0; i < 3; i++) host.started();
    host.answered({ signal: 'timeout', latencyMs: 1_000, startedAt: T0 }, T0 + 1_000);
    host.answered({ signal: 'timeout', latencyMs: 1_000, startedAt: T0 }, T0 + 1_000);
    expect(host.pausedUntil(T0 + 1_000)).toBe(0);
    expect(host.answered({ signal: 'timeout', latencyMs: 1_000, startedAt: T0 }, T0 + 1_000)).toBe(true);
    expect(host.pausedUntil(T0 + 1_000)).toBe(T0 + 2_000);
    expect(host.room(T0 + 1_500)).toBe(0);
    expect(host.limit).toBe(1);
    expect(host.stored()).toMatchObject({ openUntil: T0 + 2_000, cooldownMs: 1_000, lastChange: { reason: 'paused' } });
  });

  it('lets the probe after the pause reopen it for twice as long, and an answer close it', () => {
    const host = new HostAdmission(fresh({ openUntil: T0, cooldownMs: 1_000, limit: 1 }), BOUNDS, BREAKER);
    expect(host.room(T0 + 1)).toBe(1);
    host.started();
    host.answered({ signal: 'timeout', latencyMs: 1_000, startedAt: T0 + 1 }, T0 + 1_001);
    expect(host.pausedUntil(T0 + 1_001)).toBe(T0 + 3_001);
    const probed = new HostAdmission(fresh({ openUntil: T0, cooldownMs: 1_000, limit: 1 }), BOUNDS, BREAKER);
    probed.started();
    expect(probed.answered({ signal: 'ok', latencyMs: 20, startedAt: T0 + 1 }, T0 + 21)).toBe(true);
    expect(probed.stored()).toMatchObject({ openUntil: 0, cooldownMs: 0 });
  });

  it('takes a timeout while the host answered others promptly as that request’s own: no cut, no breaker count', () => {
    const host = new HostAdmission(fresh({ minRttMs: 50, ceiling: 40 }), BOUNDS, BREAKER);
    for (let i = 0; i < 4; i++) host.started();
    host.answered({ signal: 'ok', latencyMs: 50, startedAt: T0 + 10 }, T0 + 60);
    for (let i = 0; i < 3; i++) host.answered({ signal: 'timeout', latencyMs: 1_000, startedAt: T0 }, T0 + 1_000);
    expect(host.limit).toBe(20);
    expect(host.pausedUntil(T0 + 1_000)).toBe(0);
  });
});

describe('lanes: a host drained by several workers', () => {
  it('splits a limit into parts that add up to it, one lane per half a worker of it, at most 8', () => {
    expect([0, 1, 2].map((lane) => laneShare(20, lane, 3))).toEqual([7, 7, 6]);
    expect([0, 1, 2, 3].map((lane) => laneShare(2, lane, 4))).toEqual([1, 1, 0, 0]);
    expect(lanesFor(20, 250)).toBe(1);
    expect(lanesFor(600, 250)).toBe(3);
    expect(lanesFor(100_000, 250)).toBe(8);
  });

  it("holds each lane to its share of the host's limit", () => {
    const lane = new HostAdmission(fresh({ limit: 20, lanes: 4 }), BOUNDS, BREAKER, 3);
    for (let i = 0; i < 4; i++) lane.started();
    expect(lane.room(T0)).toBe(1);
    lane.follow(fresh({ limit: 8, lanes: 4 }));
    expect(lane.room(T0)).toBe(0);
  });

  it('tells lane 0 when its attempts are beyond its part after the lanes grew (the other lanes wait for that)', () => {
    const first = new HostAdmission(fresh({ limit: 120, lanes: 1 }), BOUNDS, BREAKER, 0);
    for (let i = 0; i < 120; i++) first.started();
    expect(first.withinPart()).toBe(true);
    first.setLanes(3);
    expect(first.withinPart()).toBe(false);
    for (let i = 0; i < 80; i++) first.answered({ signal: 'other', latencyMs: 0, startedAt: T0 }, T0);
    expect(first.withinPart()).toBe(true);
    expect(first.room(T0)).toBe(0);
  });
});

describe('fewPickable: when a drain waits a moment before it picks', () => {
  const busy = (inFlight: Record<string, number>) => new Map(Object.entries(inFlight));

  it('waits while the room is under a quarter of the limit, as before webhooks count', () => {
    expect(fewPickable(10, 80, 1_000_000, [], busy({}))).toBe(true);
    expect(fewPickable(20, 80, 1_000_000, [], busy({}))).toBe(false);
    expect(fewPickable(1, 2, 1_000_000, [], busy({}))).toBe(true);
  });

  it("waits while the webhooks' caps leave little to pick, however large the host's room", () => {
    // Two webhooks capped at 20 with 37 in flight: 3 could go, of the 40 they take at once.
    expect(fewPickable(41, 78, 20, ['a', 'b'], busy({ a: 19, b: 18 }))).toBe(true);
    // Half their caps free: a pick fills 20.
    expect(fewPickable(58, 78, 20, ['a', 'b'], busy({ a: 10, b: 10 }))).toBe(false);
  });

  it('counts a webhook with nothing in flight at its whole cap, and the host room when it is less', () => {
    expect(fewPickable(30, 200, 20, ['a', 'b', 'c'], busy({ a: 20, b: 20 }))).toBe(false);
    expect(fewPickable(5, 200, 20, ['a', 'b', 'c'], busy({}))).toBe(true);
  });
});
