import { UsageError } from './cli-error.js';

// Flag value checks: each throws a UsageError naming the flag, before anything connects.

const NAME_MAX_CHARS = 255; // the varchar(255) of workspaces.name and calculators.name
const CONTROL_CHARS = /\p{Cc}/u;

export function parseName(raw: string, flag: string): string {
  const name = raw.trim();
  if (name === '') throw new UsageError(`${flag} must not be empty`);
  // Postgres counts characters (code points), not UTF-16 units.
  const chars = [...name].length;
  if (chars > NAME_MAX_CHARS)
    throw new UsageError(`${flag} must be at most ${NAME_MAX_CHARS} characters (got ${chars})`);
  if (CONTROL_CHARS.test(name)) throw new UsageError(`${flag} must not contain control characters`);
  return name;
}

/** The spec shows only `draft`; `published` stands for a live calculator (statuses are otherwise open). */
export const CALCULATOR_STATUSES = ['draft', 'published'] as const;

export type CalculatorStatus = (typeof CALCULATOR_STATUSES)[number];

export function parseStatus(raw: string, flag: string): CalculatorStatus {
  if ((CALCULATOR_STATUSES as readonly string[]).includes(raw)) return raw as CalculatorStatus;
  throw new UsageError(`${flag} must be one of ${CALCULATOR_STATUSES.join(', ')} (got "${raw}")`);
}

export function parseKeyPrefix(raw: string, flag: string): string {
  if (/^ack_[a-z0-9]{8}$/.test(raw)) return raw;
  throw new UsageError(`${flag} must be a key prefix such as ack_1a2b3c4d (as apikey:list shows it)`);
}

export function parseNonEmpty(raw: string, flag: string): string {
  if (raw.trim() === '') throw new UsageError(`${flag} must not be empty`);
  return raw.trim();
}

export type JsonObject = Record<string, unknown>;

export function parseJsonObject(raw: string, flag: string): JsonObject {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    throw new UsageError(`${flag} is not valid JSON (${(error as Error).message})`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new UsageError(`${flag} must be a JSON object, such as '{"answer":42}'`);
  }
  return value as JsonObject;
}

export function parseBoolean(raw: string, flag: string): boolean {
  if (raw === 'true' || raw === 'false') return raw === 'true';
  throw new UsageError(`${flag} must be true or false (got "${raw}")`);
}
