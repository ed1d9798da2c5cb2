import { maxAttemptsFor, nextRetryDelayMs, parseRetryAfter } from '../retry-schedule.js';
import type { SendResult } from './webhook-sender.js';

export type AttemptOutcome =
  | { status: 'succeeded' }
  | { status: 'failed'; reason: string }
  | { status: 'pending'; delayMs: number; reason: string };

const RETRY_AFTER_STATUSES = new Set([429, 503]);

export function describeFailure(result: SendResult): string {
  return result.error ?? `Receiver answered HTTP ${result.statusCode}`;
}

/**
 * What an attempt's result means for its delivery: done, given up, or retried after a delay. `maxAttempts`
 * is the delivery's (its schedule's when created, or one more after a manual retry); `scheduleMs` is its
 * webhook's schedule now, which also ends it once exhausted (a webhook switched to `none`, say).
 */
export function decideOutcome(
  result: SendResult,
  attemptNumber: number,
  maxAttempts: number,
  scheduleMs: number[],
  random: () => number = Math.random,
): AttemptOutcome {
  if (result.ok) return { status: 'succeeded' };
  const reason = describeFailure(result);
  // Refused by the SSRF guard: every retry would be refused again.
  if (result.refused) return { status: 'failed', reason };
  // 410 Gone: the receiver says it will never accept this delivery.
  if (result.statusCode === 410) return { status: 'failed', reason: `${reason} (410 Gone ends the delivery)` };
  if (attemptNumber >= Math.min(maxAttempts, maxAttemptsFor(scheduleMs))) return { status: 'failed', reason };
  const retryAfterMs = RETRY_AFTER_STATUSES.has(result.statusCode ?? 0) ? parseRetryAfter(result.retryAfter) : null;
  return { status: 'pending', delayMs: nextRetryDelayMs(attemptNumber, scheduleMs, retryAfterMs, random), reason };
}
