import type { AppConfig } from '../config/config.js';

/**
 * Where each queue's keys live (DESIGN 9). One Redis and one delivery queue: every key under QUEUE_PREFIX,
 * as always. With QUEUE_SHARDS above 1 or a Redis Cluster, each queue gets its own hash tag: BullMQ's
 * scripts need every key of a queue in one slot, and distinct tags spread the queues over the nodes.
 */
export class QueueLayout {
  private readonly tagged: boolean;

  constructor(
    private readonly prefix: string,
    readonly shards: number,
    cluster: boolean,
  ) {
    this.tagged = cluster || shards > 1;
  }

  static of(config: Pick<AppConfig, 'queuePrefix' | 'queueShards' | 'redisClusterNodes'>): QueueLayout {
    return new QueueLayout(config.queuePrefix, config.queueShards, config.redisClusterNodes !== null);
  }

  /** The delivery shard's prefix; its hosts' admission state is named from it too, so it shares the slot. */
  deliveryPrefix(shard: number): string {
    return this.tagged ? `${this.prefix}:{d${shard}}` : this.prefix;
  }

  get deliveryPrefixes(): string[] {
    return Array.from({ length: this.shards }, (_, shard) => this.deliveryPrefix(shard));
  }

  /** The scheduled jobs' queue (sweeper, retention and the like). */
  get maintenancePrefix(): string {
    return this.tagged ? `${this.prefix}:{m}` : this.prefix;
  }

  /** Keys outside any queue (rate-limit counters): each a single key, so any slot will do. */
  get plainPrefix(): string {
    return this.prefix;
  }

  /** A host's shard: every delivery to it in one queue, with its admission state in the same slot. */
  shardOf(destination: string): number {
    return this.shards === 1 ? 0 : fnv1a(destination) % this.shards;
  }
}

/** 32-bit FNV-1a: stable across processes and releases, which a shard choice must be. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
