import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { answerMalformedRequests } from '../security/malformed-requests.js';

export const API_PREFIX = 'api/v1';

/**
 * Core's part of what is set up outside Nest's pipeline (AppModule wires that): the logger, Express
 * settings and the HTTP parser's errors. The app's pages are mounted by setupApp (src/app.setup.ts).
 */
export function configureApp(app: INestApplication): void {
  const http = app as NestExpressApplication;
  http.useLogger(app.get(Logger));
  http.disable('x-powered-by');
  // No ETag: it hashes every response body, and no client of this API sends If-None-Match.
  http.set('etag', false);
  http.set('query parser', 'simple');
  answerMalformedRequests(http.getHttpServer()); // what Node's parser refuses gets the JSON error body too
}
