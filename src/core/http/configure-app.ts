import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { mountQueueDashboard } from '../../admin/queue-dashboard.js';
import { setupOpenApi } from '../../openapi/openapi.js';
import { AppLogger } from '../logging/app-logger.js';
import { answerMalformedRequests } from '../security/malformed-requests.js';

export const API_PREFIX = 'api/v1';

/**
 * What the API process and the e2e tests set up outside Nest's pipeline (AppModule wires that):
 * the logger, Express settings, the HTTP parser's errors, and the pages that are not Nest routes.
 */
export function configureApp(app: INestApplication): void {
  const http = app as NestExpressApplication;
  http.useLogger(app.get(AppLogger));
  http.disable('x-powered-by');
  http.set('query parser', 'simple');
  answerMalformedRequests(http.getHttpServer()); // what Node's parser refuses gets the JSON error body too
  mountQueueDashboard(http);
  setupOpenApi(http, API_PREFIX); // the document and the docs page, no key needed
}
