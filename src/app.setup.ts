import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { mountQueueDashboard } from './admin/queue-dashboard.js';
import { mountConsole } from './console/console-page.js';
import { API_PREFIX, configureApp } from './core/http/configure-app.js';
import { setupOpenApi } from './openapi/openapi.js';

/**
 * What the API process and the e2e tests set up outside Nest's pipeline: core's HTTP settings, then the
 * pages that are not Nest routes.
 */
export function setupApp(app: INestApplication): void {
  configureApp(app);
  const http = app as NestExpressApplication;
  mountQueueDashboard(http);
  setupOpenApi(http, API_PREFIX); // the document and the docs page, no key needed
  mountConsole(http); // the web console, static files; it calls the API with the key it is given
}
