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
 * Saves a lane's view of its host into the host's hash, merged with what other lanes saved meanwhile: a
 * cut of the limit always stands, growth only over the limit it grew from (`base`), so a lane's growth
 * never undoes another's cut; a pause holds until it ends, whoever saves; the lanes are lane 0's to set;
 * each lane's attempts in flight are its own field. KEYS: the hash, the shard's registry. ARGV: now, key
 * TTL, host, lane, base, then FIELDS' values in order. Returns the limit stored now.
 */
const SAVE_HOST = `
  local now, lane, base = tonumber(ARGV[1]), ARGV[4], ARGV[5]
  local v = {}
  for i, name in ipairs({ ${FIELDS.map((name) => `'${name}'`).join(', ')} }) do v[name] = ARGV[5 + i] end
  local cur = redis.call('HMGET', KEYS[1], 'limit', 'open_until')
  local stored, storedOpen = tonumber(cur[1]), tonumber(cur[2] or '0') or 0
  local out = {}
  if not stored or tonumber(v.limit) <= stored or base == '' or tonumber(base) == stored then
    for _, name in ipairs({ 'limit', 'minrtt', 'minrtt_load', 'ceiling', 'reason', 'changed_at' }) do
      table.insert(out, name)
      table.insert(out, v[name])
    end
  end
  local mine = tonumber(v.open_until)
  if (mine > 0 and mine >= storedOpen) or (mine == 0 and storedOpen <= now) then
    table.insert(out, 'open_until')
    table.insert(out, v.open_until)
    table.insert(out, 'cooldown')
    table.insert(out, v.cooldown)
  end
  if lane == '0' then
    table.insert(out, 'lanes')
    table.insert(out, v.lanes)
  end
  table.insert(out, 'inflight:' .. lane)
  table.insert(out, v.inflight)
  redis.call('HSET', KEYS[1], unpack(out))
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('ZADD', KEYS[2], now, ARGV[3])
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[2]))
  return redis.call('HGET', KEYS[1], 'limit')`;

type HostRedis = RedisClient & {
  saveHost(...keysAndArgs: (string | number)[]): Promise<string>;
};

/**
 * Hosts' admission state in Redis, one hash per host under its shard's prefix (in the slot of its wake),
 * and per shard a sorted set of the hosts by when their state was last saved: /metrics and a webhook's
 * health read those, never the keyspace. A drain loads its host's state when it starts and saves it
 * when the limit or the breaker changes, and when it ends.
 */
@Injectable()
export class HostStates {
  private readonly layout: QueueLayout;
  private readonly redis: HostRedis;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    redis: RedisClients,
  ) {
    this.layout = QueueLayout.of(config);
    this.redis = redis.get('admission') as HostRedis;
    this.redis.defineCommand('saveHost', { numberOfKeys: 2, lua: SAVE_HOST });
  }

  private prefixOf(host: string): string {
    return this.layout.deliveryPrefix(this.layout.shardOf(host));
  }

  private keyOf(host: string): string {
    return `${this.prefixOf(host)}:host:${host}`;
  }

  async load(host: string): Promise<StoredHost> {
    return this.parse(await this.redis.hgetall(this.keyOf(host)));
  }

  /**
   * Saves lane `lane`'s state, its limit grown (if it grew) from `base`: see SAVE_HOST for the merge.
   * Returns the limit stored now, the base of the lane's next growth.
   */
  async save(host: string, state: StoredHost, lane = 0, base: number | null = null): Promise<number> {
    const values = [
      state.limit,
      state.minRttMs === null ? '' : state.minRttMs.toFixed(2),
      state.minRttLoad ?? '',
      state.ceiling ?? '',
      state.lastChange?.reason ?? '',
      state.lastChange?.at ?? '',
      state.openUntil,
      state.cooldownMs,
      state.inFlight,
      state.lanes,
    ];
    const registry = `${this.prefixOf(host)}:hosts`;
    const stored = await this.redis.saveHost(
      this.keyOf(host),
      registry,
      Date.now(),
      KEY_TTL_MS,
      host,
      lane,
      base ?? '',
      ...values,
    );
    return Number(stored);
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
        for (const host of list) pipeline.hgetall(this.keyOf(host));
        const results = (await pipeline.exec()) ?? [];
        list.forEach((host, i) => {
          const [error, values] = results[i] ?? [new Error('no answer')];
          if (error) throw error;
          const stored = this.parse(values as Record<string, string>);
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

  private parse(hash: Record<string, string>): StoredHost {
    const [limit, minRtt, minRttLoad, ceiling, reason, changedAt, openUntil, cooldown, , lanes] = FIELDS.map(
      (name) => hash[name] ?? null,
    );
    // Each lane's own count; the host's is their sum.
    const inFlight = Object.entries(hash)
      .filter(([name]) => name.startsWith('inflight:'))
      .reduce((sum, [, value]) => sum + Number(value), 0);
    const number = (value: string | null) => (value ? Number(value) : null);
    return {
      limit: number(limit) ?? this.config.hostLimit.initial,
      minRttMs: number(minRtt),
      minRttLoad: number(minRttLoad),
      ceiling: number(ceiling),
      lastChange: reason && changedAt ? { reason: reason as LimitReason, at: Number(changedAt) } : null,
      openUntil: number(openUntil) ?? 0,
      cooldownMs: number(cooldown) ?? 0,
      inFlight,
      lanes: number(lanes) ?? 1,
    };
  }
}
