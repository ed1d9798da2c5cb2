import { UsageError } from './cli-error.js';

/** Every option is either required or has a default, so a command always receives a value. */
export type OptionSpec = {
  /** Placeholder shown in help, e.g. `<id>`. */
  value: string;
  description: string;
  /** Checks (and normalises) the raw value before anything connects; throws a UsageError. */
  parse?: (raw: string, flag: string) => string;
} & ({ required: true } | { default: string });

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

export function parseStatus(raw: string, flag: string): string {
  if ((CALCULATOR_STATUSES as readonly string[]).includes(raw)) return raw;
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

/** Returns the object as compact JSON text; the command parses it again. */
export function parseJsonObject(raw: string, flag: string): string {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    throw new UsageError(`${flag} is not valid JSON (${(error as Error).message})`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new UsageError(`${flag} must be a JSON object, such as '{"answer":42}'`);
  }
  return JSON.stringify(value);
}

export function parseBoolean(raw: string, flag: string): string {
  if (raw === 'true' || raw === 'false') return raw;
  throw new UsageError(`${flag} must be true or false (got "${raw}")`);
}
