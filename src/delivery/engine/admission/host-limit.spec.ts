import { decideLimit, type HostWindow } from './host-limit.js';

const BOUNDS = { initial: 20, min: 1, max: 1000 };

/** A window of a host answering 2xx in `latencyMs` (each sample alike), its limit in use. */
const window = (over: Partial<HostWindow> = {}): HostWindow => ({
  limit: 20,
  peakInFlight: 20,
  samples: 20,
  otherAnswers: 0,
  latencySumMs: 20 * 250,
  latencyMinMs: 250,
  drop: null,
  minRttMs: 250,
  minRttLoad: 20,
  ceiling: null,
  ...over,
});

describe('decideLimit', () => {
  it('leaves a host in slow start to its answers (each added a slot), and ends slow start once it is slower', () => {
    // Never overloaded, answering at its minimum: the answers grew it one by one; the window holds.
    expect(decideLimit(window(), BOUNDS)).toEqual({
      limit: 20,
      minRttMs: 250,
      minRttLoad: 20,
      ceiling: null,
      reason: null,
    });
    expect(decideLimit(window({ latencySumMs: 20 * 295 }), BOUNDS).limit).toBe(20);
    // Past 1.2 x the minimum + 50 ms (350 ms over 250): the square-root steps.
    expect(decideLimit(window({ latencySumMs: 20 * 400 }), BOUNDS).limit).toBe(25);
  });

  it('grows by the square root of the limit up to one and a half times the minimum latency', () => {
    expect(decideLimit(window({ latencySumMs: 20 * 370 }), BOUNDS)).toMatchObject({ limit: 25, reason: 'growth' });
    expect(decideLimit(window({ limit: 400, peakInFlight: 400, latencySumMs: 20 * 370 }), BOUNDS).limit).toBe(420);
  });

  it('does not grow a limit the load does not reach (less than half of it in flight)', () => {
    expect(decideLimit(window({ limit: 100, peakInFlight: 40 }), BOUNDS)).toMatchObject({ limit: 100, reason: null });
  });

  it('does not grow past the maximum', () => {
    const steady = { latencySumMs: 20 * 370, ceiling: 500 };
    expect(decideLimit(window({ limit: 990, peakInFlight: 990, ...steady }), BOUNDS)).toMatchObject({ limit: 1000 });
    expect(decideLimit(window({ limit: 1000, peakInFlight: 1000, ...steady }), BOUNDS)).toMatchObject({ reason: null });
  });

  it.each(['429', '503', 'refused', 'reset', 'timeout'] as const)('halves the limit at once on %s', (drop) => {
    expect(decideLimit(window({ limit: 40, drop, samples: 0, latencySumMs: 0 }), BOUNDS)).toEqual({
      limit: 20,
      minRttMs: 250,
      minRttLoad: 20,
      ceiling: 40,
      reason: drop,
    });
  });

  it('cuts on an overload signal even when the latencies looked fine, never below the minimum', () => {
    expect(decideLimit(window({ limit: 1, drop: '503' }), BOUNDS)).toMatchObject({ limit: 1, reason: null });
    expect(
      decideLimit(window({ limit: 3, drop: 'timeout', samples: 0 }), { initial: 5, min: 2, max: 10 }),
    ).toMatchObject({
      limit: 2,
    });
  });

  it('holds on a timeout amid answers at the usual latency (that request hung, the host is not loaded)', () => {
    expect(decideLimit(window({ limit: 40, drop: 'timeout' }), BOUNDS)).toMatchObject({ limit: 40, reason: null });
    // Amid slow answers the timeout is the host's queueing: halved.
    const slow = window({ limit: 40, drop: 'timeout', samples: 10, latencySumMs: 10 * 2_000 });
    expect(decideLimit(slow, BOUNDS)).toMatchObject({ limit: 20, reason: 'timeout' });
    // A 503 amid prompt answers still cuts: the host said it is overloaded.
    expect(decideLimit(window({ limit: 40, drop: '503' }), BOUNDS)).toMatchObject({ limit: 20, reason: '503' });
  });

  it('grows slowly near the limit of the last overload, on both sides, and forgets it past twice that', () => {
    // Cut from 40 to 20: back towards 40 in shrinking steps, 1 per window next to it.
    expect(decideLimit(window({ limit: 20, ceiling: 40 }), BOUNDS)).toMatchObject({ limit: 22, ceiling: 40 });
    expect(decideLimit(window({ limit: 38, peakInFlight: 38, ceiling: 40 }), BOUNDS).limit).toBe(39);
    expect(decideLimit(window({ limit: 41, peakInFlight: 41, ceiling: 40 }), BOUNDS).limit).toBe(42);
    expect(decideLimit(window({ limit: 75, peakInFlight: 75, ceiling: 40 }), BOUNDS)).toEqual({
      limit: 83,
      minRttMs: 250,
      minRttLoad: 75,
      ceiling: null,
      reason: 'growth',
    });
  });

  it('cuts in proportion when the mean latency is well above the recent minimum (the host is queueing)', () => {
    // 2 x 250 + 100 = 600 ms is the most a queueing-free host shows; 800 ms cuts to 600/800 of the limit,
    // and remembers the limit it cut from (no slow start past it).
    const slow = window({ limit: 40, latencySumMs: 20 * 800, latencyMinMs: 700 });
    expect(decideLimit(slow, BOUNDS)).toMatchObject({ limit: 30, reason: 'latency', ceiling: 40 });
    // Never by more than half at once.
    const crawling = window({ limit: 40, latencySumMs: 20 * 5000, latencyMinMs: 4000 });
    expect(decideLimit(crawling, BOUNDS)).toMatchObject({ limit: 20, reason: 'latency' });
  });

  it('holds between steady and queueing latency', () => {
    const rising = window({ limit: 40, peakInFlight: 40, latencySumMs: 20 * 550, latencyMinMs: 500 });
    expect(decideLimit(rising, BOUNDS)).toMatchObject({ limit: 40, reason: null });
  });

  it("does not take a fast receiver's few ms of jitter for queueing (the slack)", () => {
    const instant = (meanMs: number) =>
      window({ limit: 100, peakInFlight: 100, minRttMs: 1, latencyMinMs: 1, latencySumMs: 20 * meanMs });
    expect(decideLimit(instant(20), BOUNDS)).toMatchObject({ limit: 100, reason: null }); // slow start
    expect(decideLimit(instant(80), BOUNDS)).toMatchObject({ limit: 110, reason: 'growth' });
    expect(decideLimit(instant(150), BOUNDS)).toMatchObject({ reason: 'latency' });
  });

  it('takes a faster answer as the recent minimum at once, and follows a slower host slowly', () => {
    const faster = decideLimit(window({ peakInFlight: 30, latencyMinMs: 100, latencySumMs: 20 * 120 }), BOUNDS);
    expect(faster).toMatchObject({ minRttMs: 100, minRttLoad: 30 });
    const slower = decideLimit(window({ latencyMinMs: 410, latencySumMs: 20 * 420 }), BOUNDS).minRttMs!;
    expect(slower).toBeGreaterThan(250);
    expect(slower).toBeLessThan(270);
  });

  it('does not follow slower answers seen at more load than the minimum was taken at (our own queueing)', () => {
    // A host whose answers slow with the requests open: at 40 open they take 850 ms against 450 at 20.
    const loaded = window({ limit: 40, peakInFlight: 40, latencyMinMs: 800, latencySumMs: 20 * 850, minRttMs: 450 });
    expect(decideLimit(loaded, BOUNDS)).toMatchObject({ minRttMs: 450, minRttLoad: 20, limit: 40, reason: null });
    // Within the slack the differences are our own event loop's: a fast host's minimum follows at any load.
    const fast = window({ limit: 40, peakInFlight: 40, minRttMs: 1, latencyMinMs: 33, latencySumMs: 20 * 40 });
    expect(decideLimit(fast, BOUNDS).minRttMs).toBe(3);
  });

  it('grows a limit cut below the initial one back towards it on answers that are not 2xx, and no further', () => {
    // Cut to 4 once (ceiling 8); since then the receiver answers 500: no 2xx, so no latency to judge by.
    const rejecting = (limit: number) =>
      window({
        limit,
        peakInFlight: limit,
        samples: 0,
        latencySumMs: 0,
        latencyMinMs: 0,
        otherAnswers: 10,
        ceiling: 8,
      });
    expect(decideLimit(rejecting(4), BOUNDS)).toMatchObject({ limit: 5, reason: 'growth', minRttMs: 250 });
    expect(decideLimit(rejecting(19), BOUNDS)).toMatchObject({ limit: 20, reason: 'growth' });
    expect(decideLimit(rejecting(20), BOUNDS)).toMatchObject({ limit: 20, reason: null });
    // A limit above the initial one (grown on 2xx before) holds: errors show no room.
    expect(decideLimit(rejecting(40), BOUNDS)).toMatchObject({ limit: 40, reason: null });
    // No answer at all (nothing came back): it holds.
    expect(decideLimit(window({ ...rejecting(4), otherAnswers: 0 }), BOUNDS)).toMatchObject({ limit: 4, reason: null });
  });

  it('judges latency on 2xx answers alone, whatever errors came beside them', () => {
    // 2xx at 250 ms beside fast 410s from removed hooks at the same host: grows as 2xx alone would.
    const mixed = window({ limit: 40, peakInFlight: 40, latencySumMs: 20 * 370, otherAnswers: 30 });
    expect(decideLimit(mixed, BOUNDS)).toEqual(decideLimit(window({ ...mixed, otherAnswers: 0 }), BOUNDS));
  });

  it('learns the recent minimum from the first window, and holds a window without answers', () => {
    expect(decideLimit(window({ minRttMs: null, latencySumMs: 20 * 400 }), BOUNDS)).toEqual({
      limit: 25,
      minRttMs: 250,
      minRttLoad: 20,
      ceiling: null,
      reason: 'growth',
    });
    const empty = window({ samples: 0, latencySumMs: 0, latencyMinMs: 0, minRttMs: null, minRttLoad: null });
    expect(decideLimit(empty, BOUNDS)).toEqual({
      limit: 20,
      minRttMs: null,
      minRttLoad: null,
      ceiling: null,
      reason: null,
    });
  });
});
