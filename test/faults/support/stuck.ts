import { Queue } from 'bullmq';
import { Redis, type Cluster } from 'ioredis';
import { QueueLayout } from '../../../src/core/redis/queue-layout.js';
import { DELIVERY_QUEUE, destinationOf } from '../../../src/delivery/delivery-queue.js';
import { hostKeys } from '../../../src/delivery/host-state.js';
import { MAINTENANCE_QUEUE } from '../../../src/scheduling/scheduled-job.js';
import { clusterClient } from './cluster.js';
import type { Scenario } from './scenario.js';

/**
 * Where the jobs of deliveries still pending are, for the failure message: each one's BullMQ state, its
 * host's admission state (in line or not, slots held, limit, breaker), and when the sweeper next runs.
 * A CI failure is read from its output only, so it must say this itself.
 */
export async function whereStuck(s: Scenario, max = 5): Promise<string[]> {
  const { rows } = await s.db.query<{ id: string; url: string; attempt_count: number; next_attempt_at: Date | null }>(
    `SELECT d.id, w.url, d.attempt_count, d.next_attempt_at FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id
     WHERE d.status = 'pending' ORDER BY d.created_at LIMIT $1`,
    [max],
  );
  if (rows.length === 0) return [];
  const shards = s.options.clusterShards ?? 1;
  const layout = new QueueLayout(s.queuePrefix, shards, s.options.clusterShards !== undefined);
  const connection: Redis | Cluster = s.options.clusterShards
    ? clusterClient()
    : new Redis(s.redisUrl, { maxRetriesPerRequest: 1 });
  connection.on('error', () => undefined);
  const queues = new Map<string, Queue>();
  const queueOf = (prefix: string) =>
    queues.get(prefix) ??
    queues
      .set(
        prefix,
        new Queue(prefix === layout.maintenancePrefix ? MAINTENANCE_QUEUE : DELIVERY_QUEUE, { connection, prefix }),
      )
      .get(prefix)!;
  const lines: string[] = [];
  try {
    const now = Date.now();
    for (const d of rows) {
      const destination = destinationOf(d.url);
      const prefix = layout.deliveryPrefix(layout.shardOf(destination));
      const queue = queueOf(prefix);
      const job = await queue.getJob(d.id);
      const state = job ? await queue.getJobState(d.id) : 'no job';
      const keys = hostKeys(prefix, destination);
      const [inLine, slots, limit, breaker] = await Promise.all([
        connection.hget(keys.waiting, d.id),
        connection.zcard(keys.slots),
        connection.hget(keys.limit, 'limit'),
        connection.hgetall(keys.breaker),
      ]);
      const due = d.next_attempt_at ? `${new Date(d.next_attempt_at).getTime() - now} ms` : 'none';
      const jobText = job
        ? `${state}, made ${job.attemptsMade}, created ${now - job.timestamp} ms ago, runs at ${job.delay ? job.timestamp + job.delay - now : 0} ms, processed ${job.processedOn ? now - job.processedOn : '-'} ms ago${job.failedReason ? `, last failure ${job.failedReason}` : ''}`
        : 'no job';
      lines.push(
        `stuck ${d.id} (${destination}, ${d.attempt_count} attempts, due ${due}): job ${jobText}; host: ${inLine ? 'in line' : 'not in line'}, ${slots} slots held, limit ${limit ?? 'initial'}, breaker ${JSON.stringify(breaker)}`,
      );
    }
    const maintenance = queueOf(layout.maintenancePrefix);
    const sweep = (await maintenance.getJobSchedulers()).find((j) => j.key === 'sweep-overdue-deliveries');
    const nextJob = sweep ? await maintenance.getJobState(`repeat:${sweep.key}:${sweep.next}`) : 'none';
    lines.push(`sweeper: ${sweep ? `next run in ${(sweep.next ?? 0) - now} ms, its job ${nextJob}` : 'no scheduler'}`);
  } catch (error) {
    lines.push(`stuck: could not read Redis (${(error as Error).message})`);
  } finally {
    await Promise.all([...queues.values()].map((q) => q.close().catch(() => undefined)));
    connection.disconnect();
  }
  return lines;
}
