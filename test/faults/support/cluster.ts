import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Cluster, type Redis } from 'ioredis';
import { sleep } from './ports.js';
import { SHARED_CLUSTER } from './scenario.js';

/** A client of the shared test cluster (scripts/redis-cluster.sh). */
export const clusterClient = (): Cluster =>
  new Cluster(
    SHARED_CLUSTER.split(',').map((node) => ({ host: node.split(':')[0], port: Number(node.split(':')[1]) })),
  );

/** The master with most keys under `prefix`, with its pid. */
async function busiestMaster(cluster: Cluster, prefix: string): Promise<{ port: number; pid: number; keys: number }> {
  const counts = await Promise.all(
    cluster.nodes('master').map(async (node: Redis) => {
      const keys = (await node.keys(`${prefix}:*`)).length;
      const pid = Number(/process_id:(\d+)/.exec(await node.info('server'))![1]);
      return { port: node.options.port!, pid, keys };
    }),
  );
  return counts.sort((a, b) => b.keys - a.keys)[0];
}

/** When the cluster is whole again without the killed master: another node serves its slots. */
async function promoted(cluster: Cluster, killedPort: number): Promise<number> {
  for (;;) {
    const ok = await Promise.all(
      cluster
        .nodes('all')
        .filter((node: Redis) => node.options.port !== killedPort)
        .map(async (node: Redis) => {
          const info = await node.cluster('INFO').catch(() => '');
          const slots = await node.cluster('SLOTS').catch(() => []);
          return (
            /cluster_state:ok/.test(info as string) &&
            (slots as [number, number, [string, number]][]).every(([, , master]) => master[1] !== killedPort)
          );
        }),
    );
    if (ok.length > 0 && ok.every(Boolean)) return Date.now();
    await sleep(100);
  }
}

/**
 * SIGKILLs the master holding most keys under `prefix`, waits for its replica to take its slots, and
 * starts the killed node again (it rejoins as a replica): its key count and the failover's time.
 */
export async function failOverBusiestMaster(
  cluster: Cluster,
  prefix: string,
): Promise<{ keysOnKilledMaster: number; failoverMs: number }> {
  const victim = await busiestMaster(cluster, prefix);
  const killedAt = Date.now();
  process.kill(victim.pid, 'SIGKILL');
  const failoverMs = (await promoted(cluster, victim.port)) - killedAt;
  await promisify(execFile)('bash', ['scripts/redis-cluster.sh', 'node', String(victim.port)]);
  return { keysOnKilledMaster: victim.keys, failoverMs };
}
