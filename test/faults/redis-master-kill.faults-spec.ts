import type { Cluster } from 'ioredis';
import { settleCheckAndReport } from './support/end-state.js';
import { clusterClient, failOverBusiestMaster } from './support/cluster.js';
import { FAST_ENV, LOAD, Scenario } from './support/scenario.js';

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
    cluster = clusterClient();
    await s.startApi();
    await s.createWorkspace(2);
    await s.registerHealthyWebhooks();
    await s.startWorker();
    await s.startWorker();

    const n = LOAD.submissions;
    const stream = s.stream(n);
    await stream.reached(Math.floor(n * 0.4));
    // The master holding most of this scenario's keys (its hosts' wakes, rewake marks and admission state).
    const failover = await failOverBusiestMaster(cluster, s.queuePrefix);
    const results = await stream.done;

    await settleCheckAndReport(s, {
      scenario: SCENARIO,
      file: 'test/faults/redis-master-kill.faults-spec.ts',
      injected: `a 6-node Redis Cluster (3 masters, 3 replicas, node timeout 2 s), ${SHARDS} queue shards, two workers; at 40% of the stream the master holding most of the scenario's keys (${failover.keysOnKilledMaster}) killed with SIGKILL, its replica promoted, the killed node started again as a replica`,
      results,
      extra: { ...failover },
    });
  });
});
