import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Express } from 'express';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { uiSecurityHeaders } from '../core/security/security-headers.js';
import { HostWakes } from '../delivery/host-wakes.js';
import { MaintenanceQueue } from '../scheduling/maintenance-queue.module.js';
import { basicAuth } from './basic-auth.js';

export const QUEUE_DASHBOARD_PATH = '/admin/queues';

/**
 * Bull Board for the delivery queue (hosts' wakes: delayed until a host's next due time, active while a
 * worker drains it) and the maintenance queue (the scheduled work's runs) at /admin/queues, behind basic
 * auth; nothing is mounted (so 404) unless ADMIN_USER and ADMIN_PASSWORD are set. Postgres stays the
 * truth: a wake removed here is made again by the sweeper while its host has deliveries due.
 */
export function mountQueueDashboard(app: NestExpressApplication): void {
  const { adminCredentials } = app.get<AppConfig>(APP_CONFIG);
  if (!adminCredentials) return;
  const serverAdapter = new ExpressAdapter().setBasePath(QUEUE_DASHBOARD_PATH);
  const queues = [...app.get(HostWakes).queues, app.get(MaintenanceQueue).queue];
  createBullBoard({ queues: queues.map((queue) => new BullMQAdapter(queue)), serverAdapter });
  const dashboard = serverAdapter.getRouter() as Express; // an Express app of its own
  dashboard.disable('x-powered-by');
  app.use(QUEUE_DASHBOARD_PATH, uiSecurityHeaders(), basicAuth(adminCredentials, 'Queue dashboard'), dashboard);
}
