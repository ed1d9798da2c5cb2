import { Queue } from 'bullmq';
import { Redis, type Cluster } from 'ioredis';
import { QueueLayout } from '../../../src/core/redis/queue-layout.js';
import { DELIVERY_QUEUE, drainJobId } from '../../../src/delivery/host-wakes.js';
import { MAINTENANCE_QUEUE } from '../../../src/scheduling/scheduled-job.js';
import { clusterClient } from './cluster.js';
import type { Scenario } from './scenario.js';

/**
 * Why deliveries are still pending, for the failure message: each one's host, due time and lease, its
 * host's wake (BullMQ state), rewake mark and admission state (limit, in flight, breaker), and when the
 * sweeper next runs. A CI failure is read from its output only, so it must say this itself.
 */
export async function whereStuck(s: Scenario, max = 5): Promise<string[]> {
  const { rows } = await s.db.query<{
    id: string;
    host: string | null;
    attempt_count: number;
    next_attempt_at: Date | null;
    lease_until: Date | null;
    webhook: string;
  }>(
    `SELECT d.id, d.host, d.attempt_count, d.next_attempt_at, d.lease_until,
            CASE WHEN w.removed_at IS NOT NULL THEN 'removed' WHEN w.disabled_at IS NOT NULL THEN 'disabled'
                 ELSE 'active' END AS webhook
     FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id
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
    const ago = (at: Date | null) => (at ? `${new Date(at).getTime() - now} ms` : 'none');
    for (const d of rows) {
      const delivery = `stuck ${d.id} (webhook ${d.webhook}, ${d.attempt_count} attempts, due ${ago(d.next_attempt_at)}, lease ${ago(d.lease_until)})`;
      if (d.host === null) {
        lines.push(`${delivery}: no host`);
        continue;
      }
      const prefix = layout.deliveryPrefix(layout.shardOf(d.host));
      const queue = queueOf(prefix);
      const jobId = drainJobId(d.host);
      const job = await queue.getJob(jobId);
      const state = job ? await queue.getJobState(jobId) : 'no wake';
      // The host's keys share its shard's slot: HostStates' hash and HostWakes' rewake mark.
      const [admission, mark] = await Promise.all([
        connection.hgetall(`${prefix}:host:${d.host}`),
        connection.zscore(`${prefix}:rewake`, d.host),
      ]);
      const wake = job
        ? `${state}, made ${job.attemptsMade}, created ${now - job.timestamp} ms ago, runs at ${job.delay ? job.timestamp + job.delay - now : 0} ms, processed ${job.processedOn ? now - job.processedOn : '-'} ms ago${job.failedReason ? `, last failure ${job.failedReason}` : ''}`
        : 'no wake';
      // A busy host's further lanes (drains by webhook), as its first lane last set them.
      const lanes: string[] = [];
      for (let lane = 1; lane < Number(admission.lanes ?? 1); lane++) {
        const laneJob = await queue.getJob(drainJobId(d.host, lane));
        lanes.push(`${lane} ${laneJob ? await queue.getJobState(laneJob.id!) : 'none'}`);
      }
      lines.push(
        `${delivery} at ${d.host}: wake ${wake}; lanes [${lanes.join(', ')}]; rewake mark ${mark === null ? 'none' : `${Number(mark) - now} ms`}; admission ${JSON.stringify(admission)}`,
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
