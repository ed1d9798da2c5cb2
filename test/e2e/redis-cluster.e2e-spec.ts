import { Cluster } from 'ioredis';
import { hashApiKey } from '../../src/auth/api-key.js';
import { MaintenanceQueue } from '../../src/scheduling/maintenance-queue.module.js';
import { QueueLayout } from '../../src/core/redis/queue-layout.js';
import { RedisClients } from '../../src/core/redis/redis.module.js';
import { setupWebhook, submit, useFastDeliveryApp } from '../support/delivery.js';
import { client, registerWebhook } from '../support/management-api.js';
import { waitFor, type Receiver } from '../support/receiver.js';
import { createWorkspace, TEST_REDIS_CLUSTER_NODES } from '../support/test-app.js';

// The delivery engine on a real Redis Cluster (DESIGN 9; scripts/redis-cluster.sh starts it, 3 masters and
// 3 replicas): every delivery queue shard has its own hash tag, a host's wake and admission state share
// its shard's slot, and the shards spread over every master.

const SHARDS = 16;
const SUBMISSIONS = 20;
/** The app's warnings: a drain failing on Redis (a command sent to the wrong node, say) is one. */
const LOGS: string[] = [];

const nodes = () =>
  TEST_REDIS_CLUSTER_NODES.split(',').map((node) => {
    const [host, port] = node.split(':');
    return { host, port: Number(port) };
  });

/** The port of the master serving each slot range. */
async function mastersBySlot(cluster: Cluster): Promise<(slot: number) => number> {
  const ranges = await cluster.cluster('SLOTS');
  return (slot) => ranges.find(([from, to]) => slot >= from && slot <= to)![2][1];
}

describe('Redis Cluster (REDIS_CLUSTER_NODES, QUEUE_SHARDS)', () => {
  const env = useFastDeliveryApp(
    {
      REDIS_CLUSTER_NODES: TEST_REDIS_CLUSTER_NODES,
      QUEUE_SHARDS: String(SHARDS),
      METRICS_PORT: 'free',
      LOG_LEVEL: 'warn',
      // Every rate limit on: the script that counts a request touches three keys, which must share a slot.
      RATE_LIMIT_PER_IP_PER_MINUTE: '100000',
      RATE_LIMIT_PER_SECOND: '10000',
    },
    LOGS,
  );
  const cluster = new Cluster(nodes());
  afterAll(() => cluster.disconnect());

  it('delivers to hosts on every master once each, with each host’s state in its shard’s slot', async () => {
    const layout = QueueLayout.of(env.t.config);
    const masterOf = await mastersBySlot(cluster);
    const masterOfHost = async (host: string) => {
      const tag = /\{(.+)\}/.exec(layout.deliveryPrefix(layout.shardOf(host)))![1];
      return masterOf(Number(await cluster.cluster('KEYSLOT', tag)));
    };
    // Receivers (hosts) until their shards cover every master, so the run shows the spread.
    const receivers: Receiver[] = [];
    const covered = new Set<number>();
    while (covered.size < 3 || receivers.length < 4) {
      const receiver = await env.startReceiver();
      receivers.push(receiver);
      covered.add(await masterOfHost(new URL(receiver.url).host));
      if (receivers.length > 40) throw new Error('no receiver ports reached every master');
    }
    const first = await setupWebhook(env.t, `${receivers[0].url}/hook`);
    const webhookIds = [first.webhook.id as string];
    for (const receiver of receivers.slice(1)) {
      const hook = await registerWebhook(first.api, {
        url: `${receiver.url}/hook`,
        calculators: [first.calculator.id],
      });
      webhookIds.push(hook.id as string);
    }
    for (let i = 0; i < SUBMISSIONS; i++) await submit(first.api, first.calculator.id, { data: { i } });

    const statuses = async () =>
      (await env.t.dataSource.query(
        `SELECT status, count(*)::int AS n FROM deliveries WHERE webhook_id = ANY($1) GROUP BY 1`,
        [webhookIds],
      )) as { status: string; n: number }[];
    await waitFor(async () => (await statuses()).every((row) => row.status !== 'pending'), 20_000, 'every delivery');
    expect(await statuses()).toEqual([{ status: 'succeeded', n: SUBMISSIONS * receivers.length }]);
    expect(LOGS.filter((line) => line.includes('Host drain failed'))).toEqual([]);
    for (const receiver of receivers) {
      const ids = receiver.requests.map((r) => r.headers['webhook-id']);
      expect(new Set(ids).size).toBe(SUBMISSIONS); // none twice
    }

    // Each master holds some shard's keys: the delivery queues, the hosts' admission state and registry.
    const prefix = env.t.config.queuePrefix;
    const keysByMaster = new Map<number, string[]>();
    for (const node of cluster.nodes('master')) {
      const keys = await node.keys(`${prefix}:{d*}:*`);
      keysByMaster.set(node.options.port!, keys);
    }
    expect([...keysByMaster.values()].every((keys) => keys.length > 0)).toBe(true);
    for (const receiver of receivers) {
      const host = new URL(receiver.url).host;
      const shard = layout.deliveryPrefix(layout.shardOf(host));
      const keys = keysByMaster.get(await masterOfHost(host));
      expect(keys).toContain(`${shard}:host:${host}`);
      expect(keys).toContain(`${shard}:hosts`);
      expect(await cluster.zscore(`${shard}:hosts`, host)).not.toBeNull();
    }

    // The hosts' state reads back across the nodes: a webhook's health and /metrics.
    const health = (await client(env.t, first.key).get(`/webhooks/${webhookIds[0]}/health`)).body.data;
    expect(health.host.limit).toBeGreaterThanOrEqual(1);
    const metrics = await (await fetch(env.metricsUrl)).text();
    for (const receiver of receivers) {
      expect(metrics).toContain(`webhook_host_concurrency_limit{host="${new URL(receiver.url).host}"}`);
    }
  });

  it('counts a request for all three rate limits on the one master holding the counters', async () => {
    const { key } = await createWorkspace(env.t);
    for (let i = 0; i < 3; i++) await client(env.t, key).get('/me').expect(200);
    const masterOf = await mastersBySlot(cluster);
    const port = masterOf(Number(await cluster.cluster('KEYSLOT', 'ratelimit')));
    const master = cluster.nodes('master').find((node) => node.options.port === port)!;
    const prefix = `${env.t.config.queuePrefix}:{ratelimit}`;
    expect(await master.get(`${prefix}:minute:key:${hashApiKey(key)}`)).toBe('3');
    expect(await master.keys(`${prefix}:ip:*`)).not.toEqual([]);
    expect(LOGS.filter((line) => line.includes('Rate limit counters unavailable'))).toEqual([]);
  });

  it('closes a cluster client handed to a worker once it is given back (a maintenance worker made again)', async () => {
    const redis = env.t.app.get(RedisClients);
    const given = redis.connection('maintenance') as Cluster;
    await waitFor(() => given.status === 'ready', 5_000);
    const ended = new Promise((resolve) => given.once('end', resolve));
    redis.release(given);
    await ended; // a client left open would never end: the test times out
  });

  it('keeps the scheduled work’s job schedulers in its own slot on the cluster', async () => {
    const schedulers = await env.t.app.get(MaintenanceQueue).queue.getJobSchedulers();
    expect(schedulers.map((s) => s.key)).toEqual(expect.arrayContaining(['sweep-overdue-deliveries']));
  });
});
