// Redis CPU per attempt of the admission scripts alone (dist/.../host-admission.scripts.js, so `npm run build`
// first): batches of BATCH attempts entered, then left with a 2xx, spread over HOSTS hosts whose limit is
// the default maximum (so every attempt is admitted). Env: REDIS_URL, BATCH (24), HOSTS (1), ATTEMPTS
// (48,000). Needs redis-server on this machine (its CPU is read from /proc). Prints one line.
import { readFileSync } from 'node:fs';
import process from 'node:process';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { ENTER, LEAVE } from '../dist/delivery/engine/admission/host-admission.scripts.js';
import { hostKeys } from '../dist/delivery/host-state.js';

const batchSize = Number(process.env.BATCH ?? 24);
const hosts = Number(process.env.HOSTS ?? 1);
const attempts = Number(process.env.ATTEMPTS ?? 48_000);
// The service's defaults (src/core/config/config.ts) as the scripts take them.
const COMMON = { cap: 20, slotTtlMs: 35_000, initialLimit: 20, keyTtlMs: 3_600_000 };
const LEAVING = { breakerThreshold: 5, breakerCooldownMs: 30_000, minLimit: 1, minWindowMs: 100, maxLimit: 1000 };
const MIN_SAMPLES = 10;

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
redis.defineCommand('enterHosts', { lua: ENTER });
redis.defineCommand('leaveHosts', { lua: LEAVE });
const redisPid = Number((await redis.info('server')).match(/process_id:(\d+)/)[1]);
// utime + stime of redis-server, in clock ticks (10 ms).
const redisTicks = () => {
  const fields = readFileSync(`/proc/${redisPid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(fields[11]) + Number(fields[12]);
};

const prefix = `admission-bench-${process.pid}`;
// As HostAdmission calls the scripts: per host its seven keys declared in this order, its base in the arguments.
const hostOf = (h) => {
  const { base, slots, breaker, limit, webhooks, line, waiting, owners } = hostKeys(prefix, `h${h}:80`);
  return { base, limit, keys: [slots, breaker, limit, webhooks, line, waiting, owners] };
};
for (let h = 0; h < hosts; h += 1) await redis.hset(hostOf(h).limit, 'limit', LEAVING.maxLimit);
const common = () => [Date.now(), COMMON.cap, COMMON.slotTtlMs, COMMON.initialLimit, COMMON.keyTtlMs];

let next = 0;
const ticksBefore = redisTicks();
const cpuBefore = process.cpuUsage();
const startedAt = performance.now();
while (next < attempts) {
  const byHost = new Map();
  for (let i = 0; i < batchSize; i += 1, next += 1) {
    const h = next % hosts;
    if (!byHost.has(h)) byHost.set(h, []);
    byHost.get(h).push(next);
  }
  const keys = [];
  const entering = [];
  const leaving = [];
  for (const [h, ids] of byHost) {
    const host = hostOf(h);
    keys.push(...host.keys);
    entering.push(host.base, ids.length);
    leaving.push(host.base, ids.length);
    for (const id of ids) {
      entering.push(`d${id}:token`, `j${id}`, `w${id % 20}`, `ws${id % 3}`, COMMON.cap);
      leaving.push(`d${id}:token`, `w${id % 20}`, 'ok', 1, Date.now() - 2);
    }
  }
  const [answers] = await redis.enterHosts(keys.length, ...keys, ...common(), ...entering);
  if (answers.some((answer) => answer !== 0)) throw new Error('an attempt was not admitted');
  const { breakerThreshold, breakerCooldownMs, minLimit, minWindowMs, maxLimit } = LEAVING;
  await redis.leaveHosts(
    keys.length,
    ...keys,
    ...common(),
    breakerThreshold,
    breakerCooldownMs,
    minLimit,
    minWindowMs,
    maxLimit,
    MIN_SAMPLES,
    ...leaving,
  );
}
const seconds = (performance.now() - startedAt) / 1000;
const redisUs = ((redisTicks() - ticksBefore) * 10_000) / next;
const cpu = process.cpuUsage(cpuBefore);
let cursor = '0';
do {
  const [at, found] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
  if (found.length) await redis.del(...found);
  cursor = at;
} while (cursor !== '0');
redis.disconnect();
process.stdout.write(
  `${next} attempts, ${batchSize} a batch over ${hosts} host(s): redis-server ${redisUs.toFixed(1)} us CPU per attempt ` +
    `(enter and leave), this client ${((cpu.user + cpu.system) / next).toFixed(1)} us, ${Math.round(next / seconds)} attempts/s\n`,
);
