import { Inject, Injectable } from '@nestjs/common';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { RedisClients } from '../core/redis/redis.module.js';

/**
 * One host's admission keys (src/delivery/engine/admission writes them): its slots, breaker, adaptive
 * limit, per-webhook counts and line of waiters; the per-workspace and per-webhook lines are named from
 * `base`. All under the queue's prefix, a hash tag in a Redis Cluster, so one host's state is in one slot.
 */
export function hostKeys(prefix: string, destination: string) {
  const base = `${prefix}:dest:${destination}`;
  return {
    base,
    slots: `${base}:inflight`,
    breaker: `${base}:breaker`,
    limit: `${base}:limit`,
    webhooks: `${base}:webhooks`,
    line: `${base}:line`,
    waiting: `${base}:waiting`,
    owners: `${base}:owners`,
  };
}

/** What a host's admission shows: its current limit, attempts in flight, and why and when the limit last changed. */
export interface HostState {
  host: string;
  limit: number;
  inFlight: number;
  lastChange: { reason: string; at: string } | null;
}

const LIMIT_SUFFIX = ':limit';
// A scrape lists at most this many hosts (those with a limit kept; an idle host's expires).
const MAX_LISTED = 1_000;

/** Reads hosts' admission state from Redis, for /metrics and a webhook's health. */
@Injectable()
export class HostStates {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly redis: RedisClients,
  ) {}

  async get(destination: string): Promise<HostState> {
    const [state] = await this.read([destination]);
    return state;
  }

  /** Every host with a kept limit, up to MAX_LISTED. */
  async list(): Promise<HostState[]> {
    const client = this.redis.get('admission');
    const prefix = `${this.config.queuePrefix}:dest:`;
    const hosts: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${escapeGlob(prefix)}*${LIMIT_SUFFIX}`, 'COUNT', 500);
      cursor = next;
      for (const key of keys) hosts.push(key.slice(prefix.length, -LIMIT_SUFFIX.length));
    } while (cursor !== '0' && hosts.length < MAX_LISTED);
    return this.read([...new Set(hosts)].slice(0, MAX_LISTED));
  }

  private async read(destinations: string[]): Promise<HostState[]> {
    if (destinations.length === 0) return [];
    const now = Date.now();
    const pipeline = this.redis.get('admission').pipeline();
    for (const destination of destinations) {
      const keys = hostKeys(this.config.queuePrefix, destination);
      pipeline.hmget(keys.limit, 'limit', 'reason', 'changed_at');
      pipeline.zcount(keys.slots, `(${now}`, '+inf');
    }
    const results = (await pipeline.exec()) ?? [];
    return destinations.map((host, i) => {
      const [limitError, fields] = results[2 * i] ?? [];
      const [countError, count] = results[2 * i + 1] ?? [];
      if (limitError || countError) throw limitError ?? countError;
      const [limit, reason, changedAt] = fields as (string | null)[];
      return {
        host,
        limit: limit ? Number(limit) : this.config.hostLimit.initial,
        inFlight: Number(count ?? 0),
        lastChange: reason && changedAt ? { reason, at: new Date(Number(changedAt)).toISOString() } : null,
      };
    });
  }
}

const escapeGlob = (text: string) => text.replace(/[*?[\]\\]/g, '\\$&');
