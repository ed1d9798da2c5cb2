// The engine's own work per delivery, with the queue and admission taken away (the instant-floor phase):
// the worker's Nest context runs DeliveryAttemptService.run (connect, claim, sign, send, record, log) for
// every delivery due, read as the sweeper reads them, WORKER_CONCURRENCY at a time. Its BullMQ consumer is
// pointed at a queue prefix of its own, which holds no job, so nothing else delivers meanwhile. Not a way
// to deliver: no retries, no admission, no fairness. Env as the worker's (DATABASE_URL, QUEUE_PREFIX, ...).
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { Logger as PinoLogger } from 'nestjs-pino';
import { loadConfig } from '../dist/core/config/config.js';
import { destinationOf } from '../dist/delivery/delivery-queue.js';
import { DeliveryAttemptService } from '../dist/delivery/engine/delivery-attempt.service.js';
import { DeliveryStore } from '../dist/delivery/store/delivery-store.js';
import { WorkerModule } from '../dist/worker.module.js';

const PAGE = 5_000;

// The bench stops it with SIGTERM; a normal exit lets --cpu-prof write its profile (BENCH_PROFILE).
process.on('SIGTERM', () => process.exit(0));

// The sweeper is held off too: it would queue overdue deliveries for a consumer, which is not the point here.
const config = loadConfig({
  ...process.env,
  QUEUE_PREFIX: `${process.env.QUEUE_PREFIX ?? 'cw'}floor`,
  SWEEP_INTERVAL_MS: '3600000',
});
const app = await NestFactory.createApplicationContext(WorkerModule.forRoot(config), { bufferLogs: true });
// The worker's logger, as dist/worker.js sets it: each attempt's line at LOG_LEVEL=info is part of its cost.
app.useLogger(app.get(PinoLogger));
const attempts = app.get(DeliveryAttemptService);

// Every delivery due now, in the sweeper's pages (DeliveryStore.overdue, keyset on next_attempt_at, id).
const store = app.get(DeliveryStore);
const dueBefore = await store.dueBefore(0);
const rows = [];
for (let after = { nextAttemptAt: '-infinity', id: '' }; ;) {
  const page = await store.overdue(dueBefore, after, PAGE);
  rows.push(...page);
  if (page.length < PAGE) break;
  after = page[page.length - 1];
}

const jobs = rows.map((row) => ({
  deliveryId: row.id,
  createdAt: row.createdAt.toISOString(),
  trigger: 'scheduled',
  destination: destinationOf(row.url),
  url: row.url,
  workspaceId: row.workspaceId,
  webhookId: row.webhookId,
}));
let next = 0;
await Promise.all(
  Array.from({ length: config.workerConcurrency }, async () => {
    while (next < jobs.length) await attempts.run(jobs[next++]);
  }),
);
process.stderr.write(`floor-worker: ${jobs.length} deliveries attempted\n`);
