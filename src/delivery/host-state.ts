import { Inject, Injectable } from '@nestjs/common';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { QueueLayout } from '../core/redis/queue-layout.js';
import { RedisClients, type RedisClient } from '../core/redis/redis.module.js';
import type { LimitReason } from './engine/admission/host-limit.js';

/** What a host's admission keeps between drains (DESIGN 5): its limit and what it was learned from, and the breaker. */
export interface StoredHost {
  limit: number;
  minRttMs: number | null;
  minRttLoad: number | null;
  ceiling: number | null;
  lastChange: { reason: LimitReason; at: number } | null;
  /** The breaker: paused until then (ms; 0 when closed), and the pause it last took (doubling while it fails). */
  openUntil: number;
  cooldownMs: number;
  /** Attempts in flight when it was saved. */
  inFlight: number;
  /** How many drains (lanes, by webhook) share the host, as its first lane last decided. */
  lanes: number;
}

/** What a host's admission shows: its current limit, attempts in flight, and why and when the limit last changed. */
export interface HostState {
  host: string;
  limit: number;
  inFlight: number;
  lastChange: { reason: string; at: string } | null;
}

// An idle host's state is forgotten after this long: its limit starts again from DELIVERY_HOST_INITIAL_LIMIT.
const KEY_TTL_MS = 3_600_000;
// A scrape lists at most this many hosts, the most recently drained first.
const MAX_LISTED = 1_000;
const FIELDS = [
  'limit',
  'minrtt',
  'minrtt_load',
  'ceiling',
  'reason',
  'changed_at',
  'open_until',
  'cooldown',
  'inflight',
  'lanes',
];

/**
 * Hosts' admission state in Redis, one hash per host under its shard's prefix (in the slot of its wake),
 * and per shard a sorted set of the hosts by when their state was last saved: /metrics and a webhook's
 * health read those, never the keyspace. A drain loads its host's state when it starts and saves it
 * when the limit or the breaker changes, and when it ends.
 */
@Injectable()
export class HostStates {
  private readonly layout: QueueLayout;
  private readonly redis: RedisClient;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    redis: RedisClients,
  ) {
    this.layout = QueueLayout.of(config);
    this.redis = redis.get('admission');
  }

  private prefixOf(host: string): string {
    return this.layout.deliveryPrefix(this.layout.shardOf(host));
  }

  private keyOf(host: string): string {
    return `${this.prefixOf(host)}:host:${host}`;
  }

  async load(host: string): Promise<StoredHost> {
    const values = await this.redis.hmget(this.keyOf(host), ...FIELDS);
    return this.parse(values);
  }

  async save(host: string, state: StoredHost): Promise<void> {
    const now = Date.now();
    const fields: Record<string, string | number> = {
      limit: state.limit,
      minrtt: state.minRttMs === null ? '' : state.minRttMs.toFixed(2),
      minrtt_load: state.minRttLoad ?? '',
      ceiling: state.ceiling ?? '',
      reason: state.lastChange?.reason ?? '',
      changed_at: state.lastChange?.at ?? '',
      open_until: state.openUntil,
      cooldown: state.cooldownMs,
      inflight: state.inFlight,
      lanes: state.lanes,
    };
    const registry = `${this.prefixOf(host)}:hosts`;
    await this.redis
      .multi()
      .hset(this.keyOf(host), fields)
      .pexpire(this.keyOf(host), KEY_TTL_MS)
      .zadd(registry, now, host)
      .zremrangebyscore(registry, '-inf', now - KEY_TTL_MS)
      .exec();
  }

  async get(host: string): Promise<HostState> {
    const [state] = await this.read([host]);
    return state;
  }

  /** The hosts drained within the last hour, the most recent first, up to MAX_LISTED in all. */
  async list(): Promise<HostState[]> {
    const since = Date.now() - KEY_TTL_MS;
    const shards = await Promise.all(
      this.layout.deliveryPrefixes.map((prefix) =>
        this.redis.zrevrangebyscore(`${prefix}:hosts`, '+inf', since, 'LIMIT', 0, MAX_LISTED),
      ),
    );
    return this.read(shards.flat().slice(0, MAX_LISTED));
  }

  /** One pipeline per shard: a cluster runs a pipeline only when all its keys share a slot. */
  private async read(hosts: string[]): Promise<HostState[]> {
    const byShard = new Map<number, string[]>();
    for (const host of hosts) {
      const shard = this.layout.shardOf(host);
      byShard.set(shard, [...(byShard.get(shard) ?? []), host]);
    }
    const states = new Map<string, HostState>();
    await Promise.all(
      [...byShard.values()].map(async (list) => {
        const pipeline = this.redis.pipeline();
        for (const host of list) pipeline.hmget(this.keyOf(host), ...FIELDS);
        const results = (await pipeline.exec()) ?? [];
        list.forEach((host, i) => {
          const [error, values] = results[i] ?? [new Error('no answer')];
          if (error) throw error;
          const stored = this.parse(values as (string | null)[]);
          states.set(host, {
            host,
            limit: stored.limit,
            inFlight: stored.inFlight,
            lastChange: stored.lastChange && {
              reason: stored.lastChange.reason,
              at: new Date(stored.lastChange.at).toISOString(),
            },
          });
        });
      }),
    );
    return hosts.map((host) => states.get(host)!);
  }

  private parse(values: (string | null)[]): StoredHost {
    const [limit, minRtt, minRttLoad, ceiling, reason, changedAt, openUntil, cooldown, inFlight, lanes] = values;
    const number = (value: string | null) => (value ? Number(value) : null);
    return {
      limit: number(limit) ?? this.config.hostLimit.initial,
      minRttMs: number(minRtt),
      minRttLoad: number(minRttLoad),
      ceiling: number(ceiling),
      lastChange: reason && changedAt ? { reason: reason as LimitReason, at: Number(changedAt) } : null,
      openUntil: number(openUntil) ?? 0,
      cooldownMs: number(cooldown) ?? 0,
      inFlight: number(inFlight) ?? 0,
      lanes: number(lanes) ?? 1,
    };
  }
}
