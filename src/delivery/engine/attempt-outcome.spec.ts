import { decideOutcome, describeFailure } from './attempt-outcome.js';
import type { SendResult } from './webhook-sender.js';

const SCHEDULE = [100, 200];
const MAX_ATTEMPTS = 3;
const noJitter = () => 0.5;

const answered = (statusCode: number, retryAfter?: string): SendResult => ({
  ok: statusCode >= 200 && statusCode < 300,
  statusCode,
  responseExcerpt: '',
  retryAfter,
  error: null,
  durationMs: 5,
});

const networkError = (error: string): SendResult => ({
  ok: false,
  statusCode: null,
  responseExcerpt: null,
  retryAfter: undefined,
  error,
  durationMs: 5,
});

const decide = (result: SendResult, attemptNumber = 1) =>
  decideOutcome(result, attemptNumber, MAX_ATTEMPTS, SCHEDULE, noJitter);

describe('decideOutcome', () => {
  it.each([200, 201, 202, 204, 299])('ends the delivery succeeded on %i', (status) => {
    expect(decide(answered(status))).toEqual({ status: 'succeeded' });
  });

  it('succeeds on a 2xx even on the last attempt', () => {
    expect(decide(answered(200), MAX_ATTEMPTS)).toEqual({ status: 'succeeded' });
  });

  it.each([300, 301, 302, 400, 401, 404, 429, 500, 502, 503])('retries after %i with the scheduled delay', (status) => {
    expect(decide(answered(status))).toEqual({
      status: 'pending',
      delayMs: 100,
      reason: `Receiver answered HTTP ${status}`,
    });
  });

  it('retries a network error, giving its text as the reason', () => {
    expect(decide(networkError('ECONNRESET: socket hang up'), 2)).toEqual({
      status: 'pending',
      delayMs: 200,
      reason: 'ECONNRESET: socket hang up',
    });
  });

  it('ends the delivery failed at once on 410 Gone', () => {
    const outcome = decide(answered(410));
    expect(outcome.status).toBe('failed');
    expect(outcome).toEqual({ status: 'failed', reason: expect.stringContaining('410') });
  });

  it('ends the delivery failed at once when the SSRF guard refused it, with the rule as the reason', () => {
    const error = 'Destination 10.0.0.5 refused by the SSRF guard: private-use 10.0.0.0/8';
    expect(decide({ ...networkError(error), refused: true })).toEqual({ status: 'failed', reason: error });
  });

  it('ends the delivery failed when the last attempt fails', () => {
    expect(decide(answered(500), MAX_ATTEMPTS)).toEqual({ status: 'failed', reason: 'Receiver answered HTTP 500' });
    expect(decide(networkError('Timed out after 1000 ms'), MAX_ATTEMPTS)).toEqual({
      status: 'failed',
      reason: 'Timed out after 1000 ms',
    });
  });

  it.each([429, 503])('honours Retry-After in seconds on %i', (status) => {
    expect(decide(answered(status, '30'))).toMatchObject({ status: 'pending', delayMs: 30_000 });
  });

  it('honours Retry-After as an HTTP date on 503', () => {
    const at = new Date(Date.now() + 120_000).toUTCString();
    const outcome = decide(answered(503, at));
    expect(outcome.status).toBe('pending');
    const { delayMs } = outcome as { delayMs: number };
    expect(delayMs).toBeGreaterThan(115_000);
    expect(delayMs).toBeLessThanOrEqual(120_000);
  });

  it('keeps the scheduled delay when Retry-After is shorter', () => {
    expect(decide(answered(429, '0'), 2)).toMatchObject({ status: 'pending', delayMs: 200 });
  });

  it('caps Retry-After at 10 hours', () => {
    expect(decide(answered(429, String(7 * 24 * 3600)))).toMatchObject({ status: 'pending', delayMs: 10 * 3600_000 });
  });

  it.each([500, 502, 504, 418, 302])('ignores Retry-After on %i', (status) => {
    expect(decide(answered(status, '3600'))).toMatchObject({ status: 'pending', delayMs: 100 });
  });

  it('does not let Retry-After extend past the last attempt', () => {
    expect(decide(answered(429, '60'), MAX_ATTEMPTS)).toMatchObject({ status: 'failed' });
  });
});

describe('describeFailure', () => {
  it('prefers the error text, else names the status', () => {
    expect(describeFailure(networkError('boom'))).toBe('boom');
    expect(describeFailure(answered(500))).toBe('Receiver answered HTTP 500');
  });

  describe("with the webhook's current retry schedule (DESIGN 10)", () => {
    const failed = answered(500);

    it('ends after one attempt on `none`, whatever the delivery allowed', () => {
      expect(decideOutcome(failed, 1, 8, [], noJitter)).toEqual({
        status: 'failed',
        reason: 'Receiver answered HTTP 500',
      });
    });

    it('ends once the current schedule is exhausted, before the delivery’s own maxAttempts', () => {
      expect(decideOutcome(failed, 4, 8, [10, 20, 30, 40], noJitter).status).toBe('pending');
      expect(decideOutcome(failed, 5, 8, [10, 20, 30, 40], noJitter).status).toBe('failed');
    });

    it('keeps to the delivery’s maxAttempts when the schedule is longer (one more attempt after a retry)', () => {
      expect(decideOutcome(failed, 2, 2, [10, 20, 30, 40], noJitter).status).toBe('failed');
    });
  });
});
