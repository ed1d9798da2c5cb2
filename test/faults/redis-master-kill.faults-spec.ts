import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Cluster, type Redis } from 'ioredis';
import { settleCheckAndReport } from './support/end-state.js';
import { sleep } from './support/ports.js';
import { FAST_ENV, LOAD, Scenario, SHARED_CLUSTER } from './support/scenario.js';

const SCENARIO = 'a Redis Cluster master killed mid-stream; its replica takes over';
const SHARDS = 16;

describe(`fault: ${SCENARIO}`, () => {
  let s: Scenario | undefined;
  let cluster: Cluster | undefined;
  afterAll(async () => {
    cluster?.disconnect();
    await s?.cleanup();
  });

  it('loses nothing: every accepted submission delivered, duplicates only from attempts in flight', async () => {
    s = await Scenario.create({ name: 'redis-master-kill', clusterShards: SHARDS, env: FAST_ENV });
    cluster = new Cluster(
      SHARED_CLUSTER.split(',').map((node) => ({ host: node.split(':')[0], port: Number(node.split(':')[1]) })),
    );
    await s.startApi();
    await s.createWorkspace(2);
    await s.registerHealthyWebhooks();
    await s.startWorker();
    await s.startWorker();

    const n = LOAD.submissions;
    const stream = s.stream(n);
    await stream.reached(Math.floor(n * 0.4));
    // The master holding most of this scenario's keys (its jobs, delayed retries and hosts' state).
    const victim = await busiestMaster(cluster, s.queuePrefix);
    const killedAt = Date.now();
    process.kill(victim.pid, 'SIGKILL');
    const failoverMs = (await promoted(cluster, victim.port)) - killedAt;
    await promisify(execFile)('bash', ['scripts/redis-cluster.sh', 'node', String(victim.port)]);
    const results = await stream.done;

    await settleCheckAndReport(s, {
      scenario: SCENARIO,
      file: 'test/faults/redis-master-kill.faults-spec.ts',
      injected: `a 6-node Redis Cluster (3 masters, 3 replicas, node timeout 2 s), ${SHARDS} queue shards, two workers; at 40% of the stream the master holding most of the scenario's keys (${victim.keys}) killed with SIGKILL, its replica promoted, the killed node started again as a replica`,
      results,
      extra: { keysOnKilledMaster: victim.keys, failoverMs },
    });
  });
});

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
