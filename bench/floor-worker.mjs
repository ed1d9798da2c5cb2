// The engine's own work per delivery, with the queue and admission taken away (the instant-floor phase):
// the worker's Nest context runs DeliveryAttemptService.run (connect, claim, sign, send, record) for every
// pending delivery, WORKER_CONCURRENCY at a time, straight from Postgres. Its BullMQ consumer is pointed at
// a queue prefix of its own, which holds no job, so nothing else delivers meanwhile. Not a way to deliver:
// no retries, no admission, no fairness. Env as the worker's (DATABASE_URL, QUEUE_PREFIX, ...).
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { Logger as PinoLogger } from 'nestjs-pino';
import pg from 'pg';
import { loadConfig } from '../dist/core/config/config.js';
import { destinationOf } from '../dist/delivery/delivery-queue.js';
import { DeliveryAttemptService } from '../dist/delivery/engine/delivery-attempt.service.js';
import { WorkerModule } from '../dist/worker.module.js';

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

const db = new pg.Client({ connectionString: config.databaseUrl });
await db.connect();
const { rows } = await db.query(
  `SELECT d.id, d.created_at, w.id AS webhook_id, w.workspace_id, w.url
     FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id
    WHERE d.status = 'pending' ORDER BY d.created_at`,
);
await db.end();

const jobs = rows.map((row) => ({
  deliveryId: row.id,
  createdAt: row.created_at.toISOString(),
  trigger: 'scheduled',
  destination: destinationOf(row.url),
  url: row.url,
  workspaceId: row.workspace_id,
  webhookId: row.webhook_id,
}));
let next = 0;
await Promise.all(
  Array.from({ length: config.workerConcurrency }, async () => {
    while (next < jobs.length) await attempts.run(jobs[next++]);
  }),
);
process.stderr.write(`floor-worker: ${jobs.length} deliveries attempted\n`);
