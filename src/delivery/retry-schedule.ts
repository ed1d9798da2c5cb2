import type { AppConfig } from '../core/config/config.js';

export const MAX_RETRY_AFTER_MS = 10 * 3600 * 1000;
const JITTER = 0.2;

/**
 * A webhook's retry schedule (DESIGN 10): `standard` DELIVERY_RETRY_SCHEDULE (8 attempts over about a day),
 * `short` DELIVERY_RETRY_SCHEDULE_SHORT (5 attempts within an hour), `none` (the first attempt only).
 */
export const RETRY_SCHEDULES = ['standard', 'short', 'none'] as const;
export type RetryScheduleName = (typeof RETRY_SCHEDULES)[number];

/** The delays in ms before attempt 2, 3, ... of a named schedule. */
export function scheduleDelaysMs(
  name: RetryScheduleName,
  config: Pick<AppConfig, 'retryScheduleMs' | 'shortRetryScheduleMs'>,
): number[] {
  if (name === 'none') return [];
  return name === 'short' ? config.shortRetryScheduleMs : config.retryScheduleMs;
}

/** Attempts in all for a delivery: the first one plus one per scheduled delay. */
export const maxAttemptsFor = (scheduleMs: number[]): number => scheduleMs.length + 1;

/** `Retry-After` as seconds or an HTTP date, in ms from `now`; null when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/**
 * Delay before the attempt after `attemptNumber` (1-based): the schedule's delay with +-20% jitter,
 * or the receiver's Retry-After (capped at 10 hours) when that is longer.
 */
export function nextRetryDelayMs(
  attemptNumber: number,
  scheduleMs: number[],
  retryAfterMs: number | null = null,
  random: () => number = Math.random,
): number {
  const base = scheduleMs[Math.min(attemptNumber, scheduleMs.length) - 1] ?? 0;
  const jittered = Math.round(base * (1 - JITTER + 2 * JITTER * random()));
  return Math.max(jittered, Math.min(retryAfterMs ?? 0, MAX_RETRY_AFTER_MS));
}
