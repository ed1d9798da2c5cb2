import { Inject, Injectable, Logger } from '@nestjs/common';
import type { AppConfig } from '../config/config.js';
import { APP_CONFIG } from '../config/config.module.js';
import { RedisClients, type RedisClient } from '../redis/redis.module.js';
import { COUNT_HITS } from './count-hits.js';

const RULES = 3; // the script's keys, always all three: per IP, per key per second, per key per minute
const WARN_EVERY_MS = 60_000;

export type RuleName = 'ip' | 'second' | 'minute';

interface Rule {
  name: RuleName;
  limit: number;
  windowMs: number;
}

/** A rule's count after this request; `blocked` when over its limit. */
export interface RuleCount {
  name: RuleName;
  limit: number;
  hits: number;
  /** Seconds until the window ends (at least 1). */
  resetSeconds: number;
  blocked: boolean;
}

/** The request's subjects: its client IP (before authentication) and its key or portal link (after). */
export interface Subjects {
  ip?: string;
  key?: string;
}

type CountingRedis = RedisClient & { countHits(...args: (string | number)[]): Promise<number[]> };

/**
 * The api's request limits, counted in Redis so every replica on the same Redis and QUEUE_PREFIX shares
 * them: every rule that applies to a request in one script call (one round trip). All counters share one
 * hash tag (`{ratelimit}`), so on a Redis Cluster one script can touch them all; a counter call takes
 * microseconds, so the one master holding them serves far more than the replicas send. While Redis is unreachable a request is not limited: a
 * Redis outage must not become an API outage.
 */
@Injectable()
export class RateLimiter {
  private readonly logger = new Logger('RateLimit');
  private readonly redis: CountingRedis;
  private readonly rules: Record<RuleName, Rule>;
  private readonly keyPrefix: string;
  private lastWarnAt = 0;

  constructor(@Inject(APP_CONFIG) config: AppConfig, clients: RedisClients) {
    const limits = config.rateLimit;
    this.rules = {
      ip: { name: 'ip', limit: limits.perIpPerMinute, windowMs: 60_000 },
      second: { name: 'second', limit: limits.perSecond, windowMs: 1_000 },
      minute: { name: 'minute', limit: limits.perMinute, windowMs: 60_000 },
    };
    this.keyPrefix = `${config.queuePrefix}:{ratelimit}`;
    this.redis = clients.get('rate-limit') as CountingRedis;
    this.redis.defineCommand('countHits', { numberOfKeys: RULES, lua: COUNT_HITS });
  }

  /** Whether any rule counts this subject at all (a limit of 0 turns a rule off). */
  limits(subject: keyof Subjects): boolean {
    return subject === 'ip' ? this.rules.ip.limit > 0 : this.rules.second.limit > 0 || this.rules.minute.limit > 0;
  }

  /** Name of a counter in Redis: `<tag>:<rule>:<tracker>`, the tracker never a credential itself. */
  counterKey(rule: RuleName, tracker: string): string {
    return `${this.keyPrefix}:${rule}:${tracker}`;
  }

  /** Counts one request for its subjects; the counts of the rules reached, the refusing one last. */
  async count(subjects: Subjects): Promise<RuleCount[]> {
    const applied = [
      { rule: this.rules.ip, tracker: subjects.ip },
      { rule: this.rules.second, tracker: subjects.key },
      { rule: this.rules.minute, tracker: subjects.key },
    ].map(({ rule, tracker }) => ({ rule, tracker: rule.limit > 0 ? tracker : undefined }));
    if (applied.every((a) => a.tracker === undefined)) return [];
    const unused = `${this.keyPrefix}:-`; // never touched: its limit is 0
    const keys = applied.map((a) => (a.tracker === undefined ? unused : this.counterKey(a.rule.name, a.tracker)));
    const args = applied.flatMap((a) => [a.tracker === undefined ? 0 : a.rule.limit, a.rule.windowMs]);
    let counted: number[];
    try {
      counted = await this.redis.countHits(...keys, ...args);
    } catch (error) {
      this.warn(error as Error);
      return [];
    }
    const counts: RuleCount[] = [];
    applied.forEach(({ rule, tracker }, i) => {
      if (tracker === undefined || counted[2 * i] === undefined) return;
      const hits = counted[2 * i];
      const resetSeconds = Math.max(1, Math.ceil(counted[2 * i + 1] / 1000));
      counts.push({ name: rule.name, limit: rule.limit, hits, resetSeconds, blocked: hits > rule.limit });
    });
    return counts;
  }

  private warn(error: Error): void {
    if (Date.now() - this.lastWarnAt < WARN_EVERY_MS) return;
    this.lastWarnAt = Date.now();
    this.logger.warn(`Rate limit counters unavailable, requests are not limited: ${error.message}`);
  }
}
