import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { mountQueueDashboard } from '../../admin/queue-dashboard.js';
import { mountConsole } from '../../console/console-page.js';
import { setupOpenApi } from '../../openapi/openapi.js';
import { answerMalformedRequests } from '../security/malformed-requests.js';

export const API_PREFIX = 'api/v1';

/**
 * What the API process and the e2e tests set up outside Nest's pipeline (AppModule wires that):
 * the logger, Express settings, the HTTP parser's errors, and the pages that are not Nest routes.
 */
export function configureApp(app: INestApplication): void {
  const http = app as NestExpressApplication;
  http.useLogger(app.get(Logger));
  http.disable('x-powered-by');
  http.set('query parser', 'simple');
  answerMalformedRequests(http.getHttpServer()); // what Node's parser refuses gets the JSON error body too
  mountQueueDashboard(http);
  setupOpenApi(http, API_PREFIX); // the document and the docs page, no key needed
  mountConsole(http); // the web console, static files; it calls the API with the key it is given
}
