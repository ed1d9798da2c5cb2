// CPU per attempt of host admission alone: the service's HostAdmission (dist/, so `npm run build` first) with
// its defaults, against one Redis. Rounds of BATCH attempts entered at once, then left at once with a 2xx,
// spread over HOSTS hosts whose limit starts at DELIVERY_HOST_MAX_LIMIT (so every attempt is admitted).
// Env: REDIS_URL, BATCH (24), HOSTS (1), ATTEMPTS (48,000). Needs redis-server on this machine (its CPU is
// read from /proc). Prints one line: redis-server's CPU and this process's per attempt.
import process from 'node:process';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../dist/core/config/config.js';
import { RedisClients } from '../dist/core/redis/redis.module.js';
import { QueueLayout } from '../dist/core/redis/queue-layout.js';
import { HostAdmission } from '../dist/delivery/engine/admission/host-admission.js';
import { hostKeysOf } from '../dist/delivery/host-state.js';
import { procCpuMs } from './lib/processes.mjs';
import { deleteRedisKeys, REDIS_URL } from './lib/setup.mjs';

const batchSize = Number(process.env.BATCH ?? 24);
const hosts = Number(process.env.HOSTS ?? 1);
const attempts = Number(process.env.ATTEMPTS ?? 48_000);

const config = loadConfig({
  NODE_ENV: 'production',
  DATABASE_URL: 'postgres://unused@127.0.0.1/unused',
  REDIS_URL,
  QUEUE_PREFIX: `admission-bench-${process.pid}`,
});
const clients = new RedisClients(config);
const admission = new HostAdmission(config, clients);
const redis = clients.get('admission');
const layout = QueueLayout.of(config);
const destinationOf = (h) => `h${h}.example:443`;

const redisPid = Number((await redis.info('server')).match(/process_id:(\d+)/)[1]);
for (let h = 0; h < hosts; h += 1) {
  await redis.hset(hostKeysOf(layout, destinationOf(h)).limit, 'limit', config.hostLimit.max);
}

let next = 0;
const redisBefore = procCpuMs(redisPid);
const cpuBefore = process.cpuUsage();
const startedAt = performance.now();
while (next < attempts) {
  const round = Array.from({ length: batchSize }, (_, i) => {
    const id = next + i;
    return {
      destination: destinationOf(id % hosts),
      holder: `d${id}:token`,
      jobId: `j${id}`,
      webhookId: `w${id % 20}`,
      workspaceId: `ws${id % 3}`,
      cap: config.maxInFlightPerWebhook,
    };
  });
  next += batchSize;
  const entered = await Promise.all(round.map((attempt) => admission.enter(attempt)));
  if (entered.some(([answer]) => answer !== 0)) throw new Error('an attempt was not admitted');
  const admittedAt = Date.now();
  await Promise.all(
    round.map(({ destination, holder, webhookId }) =>
      admission.leave(destination, holder, webhookId, { signal: 'ok', latencyMs: 1, admittedAt }),
    ),
  );
}
const seconds = (performance.now() - startedAt) / 1000;
const redisUs = ((procCpuMs(redisPid) - redisBefore) * 1000) / next;
const cpu = process.cpuUsage(cpuBefore);
await deleteRedisKeys([config.queuePrefix]);
await clients.onApplicationShutdown();
process.stdout.write(
  `${next} attempts, ${batchSize} at a time over ${hosts} host(s): redis-server ${redisUs.toFixed(1)} us CPU per ` +
    `attempt (enter and leave), this process ${((cpu.user + cpu.system) / next).toFixed(1)} us, ${Math.round(next / seconds)} attempts/s\n`,
);
