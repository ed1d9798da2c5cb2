import { parseDurationList } from '../core/config/config.js';
import { MAX_RETRY_AFTER_MS, maxAttemptsFor, nextRetryDelayMs, parseRetryAfter } from './retry-schedule.js';

const DEFAULT_SCHEDULE = parseDurationList('5s,5m,30m,2h,5h,10h,10h');
const HOUR = 3600 * 1000;
const lowest = () => 0;
const middle = () => 0.5;
const highest = () => 0.999999;

describe('maxAttemptsFor', () => {
  it('counts the first attempt plus one per scheduled delay', () => {
    expect(maxAttemptsFor(DEFAULT_SCHEDULE)).toBe(8);
    expect(maxAttemptsFor([100, 200])).toBe(3);
  });
});

describe('nextRetryDelayMs', () => {
  it('uses the schedule entry of the attempt that just failed', () => {
    expect(DEFAULT_SCHEDULE.map((_, i) => nextRetryDelayMs(i + 1, DEFAULT_SCHEDULE, null, middle))).toEqual(
      DEFAULT_SCHEDULE,
    );
  });

  it('stays on the last entry past the end of the schedule', () => {
    expect(nextRetryDelayMs(20, [100, 200], null, middle)).toBe(200);
  });

  it('jitters every delay within +-20%', () => {
    for (const [i, base] of DEFAULT_SCHEDULE.entries()) {
      expect(nextRetryDelayMs(i + 1, DEFAULT_SCHEDULE, null, lowest)).toBe(base * 0.8);
      expect(nextRetryDelayMs(i + 1, DEFAULT_SCHEDULE, null, highest)).toBeCloseTo(base * 1.2, -3);
    }
  });

  it('spreads delays over the whole jitter range', () => {
    const delays = Array.from({ length: 2000 }, () => nextRetryDelayMs(1, [10_000], null));
    for (const d of delays) {
      expect(d).toBeGreaterThanOrEqual(8_000);
      expect(d).toBeLessThanOrEqual(12_000);
    }
    expect(Math.min(...delays)).toBeLessThan(8_500);
    expect(Math.max(...delays)).toBeGreaterThan(11_500);
  });

  it('takes Retry-After when it is longer than the jittered delay', () => {
    expect(nextRetryDelayMs(1, [100], 60_000, highest)).toBe(60_000);
  });

  it('keeps the scheduled delay when Retry-After is shorter', () => {
    expect(nextRetryDelayMs(2, DEFAULT_SCHEDULE, 1_000, middle)).toBe(5 * 60 * 1000);
  });

  it('caps Retry-After at 10 hours', () => {
    expect(MAX_RETRY_AFTER_MS).toBe(10 * HOUR);
    expect(nextRetryDelayMs(1, [100], 1_000 * HOUR, middle)).toBe(10 * HOUR);
  });

  it('does not cut the jitter of a 10 hour step', () => {
    expect(nextRetryDelayMs(7, DEFAULT_SCHEDULE, null, highest)).toBeGreaterThan(11.9 * HOUR);
    expect(nextRetryDelayMs(7, DEFAULT_SCHEDULE, 1_000 * HOUR, highest)).toBeGreaterThan(11.9 * HOUR);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2024-01-15T10:30:00.000Z');

  it('reads delta-seconds', () => {
    expect(parseRetryAfter('1', now)).toBe(1_000);
    expect(parseRetryAfter(' 120 ', now)).toBe(120_000);
    expect(parseRetryAfter('0', now)).toBe(0);
  });

  it('reads an HTTP date as the time left until it', () => {
    expect(parseRetryAfter('Mon, 15 Jan 2024 10:31:30 GMT', now)).toBe(90_000);
  });

  it('treats an HTTP date in the past as no wait', () => {
    expect(parseRetryAfter('Mon, 15 Jan 2024 10:00:00 GMT', now)).toBe(0);
  });

  it('ignores a missing or unreadable value', () => {
    expect(parseRetryAfter(undefined, now)).toBeNull();
    expect(parseRetryAfter('', now)).toBeNull();
    expect(parseRetryAfter('soon', now)).toBeNull();
  });
});
