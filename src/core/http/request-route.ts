import type { Request } from 'express';

/**
 * The route pattern that served the request (`/api/v1/webhooks/:webhookId`), never the raw path, so
 * logs and metric labels group by endpoint; `(unmatched)` when no route did (404s, middleware errors).
 */
export function requestRoute(req: Request): string {
  const path: unknown = req.route?.path;
  if (typeof path === 'string') return `${req.baseUrl}${path}`;
  // A route with several paths (Bull Board's pages), or a mounted app's static files.
  return req.baseUrl ? `${req.baseUrl}/*` : '(unmatched)';
}
