import { Inject, Injectable } from '@nestjs/common';
import { Cluster } from 'ioredis';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { QueueLayout } from '../core/redis/queue-layout.js';
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

/** A host's admission keys, under its queue shard's prefix: in the slot of the shard's jobs. */
export function hostKeysOf(layout: QueueLayout, destination: string) {
  return hostKeys(layout.deliveryPrefix(layout.shardOf(destination)), destination);
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
  private readonly layout: QueueLayout;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly redis: RedisClients,
  ) {
    this.layout = QueueLayout.of(config);
  }

  async get(destination: string): Promise<HostState> {
    const [state] = await this.read([destination]);
    return state;
  }

  /** Every host with a kept limit, up to MAX_LISTED: each shard's, on every node that holds keys. */
  async list(): Promise<HostState[]> {
    const client = this.redis.get('admission');
    const nodes = client instanceof Cluster ? client.nodes('master') : [client];
    const hosts = new Set<string>();
    for (const prefix of this.layout.deliveryPrefixes.map((p) => `${p}:dest:`)) {
      for (const node of nodes) {
        let cursor = '0';
        do {
          const [next, keys] = await node.scan(cursor, 'MATCH', `${escapeGlob(prefix)}*${LIMIT_SUFFIX}`, 'COUNT', 500);
          cursor = next;
          for (const key of keys) hosts.add(key.slice(prefix.length, -LIMIT_SUFFIX.length));
        } while (cursor !== '0' && hosts.size < MAX_LISTED);
      }
    }
    return this.read([...hosts].slice(0, MAX_LISTED));
  }

  /** One pipeline per shard: a cluster runs a pipeline only when all its keys share a slot. */
  private async read(destinations: string[]): Promise<HostState[]> {
    const byShard = new Map<number, string[]>();
    for (const destination of destinations) {
      const shard = this.layout.shardOf(destination);
      byShard.set(shard, [...(byShard.get(shard) ?? []), destination]);
    }
    const states = new Map<string, HostState>();
    await Promise.all(
      [...byShard.values()].map(async (hosts) => {
        for (const state of await this.readShard(hosts)) states.set(state.host, state);
      }),
    );
    return destinations.map((host) => states.get(host) as HostState);
  }

  private async readShard(destinations: string[]): Promise<HostState[]> {
    const now = Date.now();
    const pipeline = this.redis.get('admission').pipeline();
    for (const destination of destinations) {
      const keys = hostKeysOf(this.layout, destination);
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
