import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Cluster } from 'ioredis';
import { settleCheckAndReport } from './support/end-state.js';
import { sleep, waitUntil } from './support/ports.js';
import { clusterClient, failOverBusiestMaster } from './support/cluster.js';
import { FAST_ENV, LOAD, Scenario } from './support/scenario.js';

const SCENARIO =
  'soak past one machine: two apis, three workers, a Redis Cluster; a worker, a master and Postgres fail';
const SHARDS = 16;
const CLIENT_TIMEOUT_MS = 5000;

// Issue 30's soak (DESIGN 9): the processes as on separate hosts, on the cluster, with each fault in turn
// while submissions stream through both apis.
describe(`fault: ${SCENARIO}`, () => {
  let s: Scenario | undefined;
  let cluster: Cluster | undefined;
  afterAll(async () => {
    cluster?.disconnect();
    await s?.cleanup();
  });

  it('delivers every accepted submission through a worker kill, a master failover and a Postgres restart', async () => {
    s = await Scenario.create({ name: 'soak-cluster', privatePostgres: true, clusterShards: SHARDS, env: FAST_ENV });
    cluster = clusterClient();
    await s.startApi();
    const otherApi = await s.startOtherApi();
    await s.createWorkspace(2);
    await s.registerHealthyWebhooks();
    await s.startWorker();
    await s.startWorker();
    const doomed = await s.startWorker();

    // Half the submissions through each api, at half the rate each.
    const n = LOAD.submissions;
    const half = Math.floor(n / 2);
    const perSecond = LOAD.perSecond / 2;
    const first = s.stream(half, { perSecond, clientTimeoutMs: CLIENT_TIMEOUT_MS });
    const second = s.stream(n - half, {
      apiUrl: otherApi,
      firstN: half,
      perSecond,
      clientTimeoutMs: CLIENT_TIMEOUT_MS,
    });
    const reached = (share: number) =>
      Promise.all([first.reached(Math.floor(half * share)), second.reached(Math.floor((n - half) * share))]);

    await reached(0.2);
    await doomed.kill('SIGKILL');
    await sleep(2000);
    await s.startWorker();

    await reached(0.45);
    const failover = await failOverBusiestMaster(cluster, s.queuePrefix);

    await reached(0.7);
    const pgDownAt = Date.now();
    await s.postgres!.stop();
    await sleep(3000);
    await s.postgres!.start();
    const postgresDownMs = Date.now() - pgDownAt;

    const results = [...(await first.done), ...(await second.done)];
    await waitUntil(async () => (await bashStatus()) === 0, 60_000, 'the cluster to have 3 masters and 3 replicas');
    await settleCheckAndReport(s, {
      scenario: SCENARIO,
      file: 'test/faults/soak-cluster.faults-spec.ts',
      injected: `two api processes (half the stream each) and three workers on a 6-node Redis Cluster (${SHARDS} queue shards) and a private Postgres; at 20% of the stream one worker SIGKILLed and a new one started 2 s later; at 45% the master holding most keys SIGKILLed (its replica promoted, the node started again as a replica); at 70% Postgres stopped with \`pg_ctl stop -m immediate\` and started 3 s later`,
      results,
      extra: { workerKills: 1, ...failover, postgresDownMs },
    });
  });
});

async function bashStatus(): Promise<number> {
  return promisify(execFile)('bash', ['scripts/redis-cluster.sh', 'status']).then(
    () => 0,
    () => 1,
  );
}
