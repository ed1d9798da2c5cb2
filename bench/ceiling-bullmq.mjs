// Ceiling for the delivery figures: a bare BullMQ queue and one Worker processing no-op jobs.
// Env: REDIS_URL, QUEUE_PREFIX, JOBS, CONCURRENCY, REDIS_PID (optional). Prints one JSON line with the
// drain rate and the CPU time per job of this process and of redis-server.
import { Queue, Worker } from 'bullmq';
import process from 'node:process';
import { performance } from 'node:perf_hooks';
import { procCpuMs } from './lib/processes.mjs';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = process.env.QUEUE_PREFIX;
const jobs = Number(process.env.JOBS ?? 20_000);
const concurrency = Number(process.env.CONCURRENCY ?? 50);
const connection = { url: redisUrl, maxRetriesPerRequest: null };
const NAME = 'noop';
const ADD_BATCH = 1000;

const queue = new Queue(NAME, { connection, prefix });
// The same job shape and options as a delivery job, so only the processing differs.
for (let i = 0; i < jobs; i += ADD_BATCH) {
  const batch = [];
  for (let j = i; j < Math.min(i + ADD_BATCH, jobs); j += 1) {
    batch.push({
      name: 'deliver',
      data: { deliveryId: `job${j}`, trigger: 'scheduled', destination: '127.0.0.1:9' },
      opts: { attempts: 1_000_000, removeOnComplete: true, removeOnFail: true, jobId: `job${j}` },
    });
  }
  await queue.addBulk(batch);
}

let completed = 0;
let startedAt = null;
let cpuAtStart = null;
const redisPid = Number(process.env.REDIS_PID) || null;
const redisCpu = () => (redisPid ? procCpuMs(redisPid) : null);
let finish;
const drained = new Promise((resolve) => (finish = resolve));
const worker = new Worker(
  NAME,
  async () => {
    if (startedAt === null) {
      startedAt = performance.now();
      cpuAtStart = { self: process.cpuUsage(), redis: redisCpu() };
    }
    return 'ok';
  },
  { connection, prefix, concurrency, autorun: false },
);
let cpuAtEnd = null;
worker.on('completed', () => {
  completed += 1;
  if (completed === jobs) {
    cpuAtEnd = { self: process.cpuUsage(cpuAtStart.self), redis: redisCpu() };
    finish(performance.now());
  }
});
void worker.run();
const endedAt = await drained;
await worker.close();
await queue.obliterate({ force: true });
await queue.close();

const seconds = (endedAt - startedAt) / 1000;
const cpuMsPerJob = (cpuAtEnd.self.user + cpuAtEnd.self.system) / 1000 / jobs;
const redisCpuMsPerJob = redisPid ? (cpuAtEnd.redis - cpuAtStart.redis) / jobs : null;
process.stdout.write(
  `${JSON.stringify({ jobs, concurrency, seconds, jobsPerSec: jobs / seconds, cpuMsPerJob, redisCpuMsPerJob })}\n`,
);
