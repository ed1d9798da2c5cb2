// The engine's own work per delivery, with the queue and admission taken away (the instant-floor phase):
// the worker's Nest context runs DeliveryAttemptService.run (connect, claim, sign, send, record, log) for
// every delivery due, read here by one plain query, FLOOR_CONCURRENCY (else WORKER_CONCURRENCY) at a time.
// Its wake consumer is pointed at a queue prefix of its own, which holds no wake, so nothing else delivers
// meanwhile. Not a way to deliver: no retries, no admission, no fairness. Env as the worker's
// (DATABASE_URL, QUEUE_PREFIX, ...).
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { Logger as PinoLogger } from 'nestjs-pino';
import { DataSource } from 'typeorm';
import { loadConfig } from '../dist/core/config/config.js';
import { DeliveryAttemptService } from '../dist/delivery/engine/delivery-attempt.service.js';
import { WorkerModule } from '../dist/worker.module.js';

// The bench stops it with SIGTERM; a normal exit lets --cpu-prof write its profile (BENCH_PROFILE).
process.on('SIGTERM', () => process.exit(0));

// The sweeper is held off too: it would wake hosts for a drain, which is not the point here.
const config = loadConfig({
  ...process.env,
  QUEUE_PREFIX: `${process.env.QUEUE_PREFIX ?? 'cw'}floor`,
  SWEEP_INTERVAL_MS: '3600000',
});
const concurrency = Number(process.env.FLOOR_CONCURRENCY || config.workerConcurrency);
const app = await NestFactory.createApplicationContext(WorkerModule.forRoot(config), { bufferLogs: true });
// The worker's logger, as dist/worker.js sets it: each attempt's line at LOG_LEVEL=info is part of its cost.
app.useLogger(app.get(PinoLogger));
const attempts = app.get(DeliveryAttemptService);

// Every delivery due now, with what an attempt takes (DueDelivery); no trace, as with tracing off.
const rows = await app.get(DataSource).query(
  `SELECT d.id, d.created_at, d.next_trigger, d.host, w.url, d.webhook_id, w.workspace_id
   FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id
   WHERE d.status = 'pending' AND d.next_attempt_at <= now()
   ORDER BY d.next_attempt_at, d.id`,
);
const due = rows.map((row) => ({
  deliveryId: row.id,
  createdAt: row.created_at,
  trigger: row.next_trigger,
  host: row.host,
  url: row.url,
  webhookId: row.webhook_id,
  workspaceId: row.workspace_id,
  trace: null,
}));
const deliveries = due.length;
let next = 0;
// An attempt that fails before it is recorded (a pool wait timed out, say) goes to the end of the list:
// left pending, the phase would never end. How many did is printed, as it is extra work for the floor.
const failures = new Map();
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < due.length) {
      const delivery = due[next++];
      await attempts.run(delivery).catch((error) => {
        failures.set(error.message, (failures.get(error.message) ?? 0) + 1);
        due.push(delivery);
      });
    }
  }),
);
const failed = [...failures].map(([message, n]) => `${n} x ${message}`).join('; ');
process.stderr.write(
  `floor-worker: ${next} attempts of ${deliveries} deliveries, ${concurrency} at a time${failed ? `; failed and tried again: ${failed}` : ''}\n`,
);
