import type { NextFunction, Request, RequestHandler, Response } from 'express';
import helmet from 'helmet';

/** HTML pages served by the api: the API reference (its own inline scripts and styles) and the queue dashboard. */
export const UI_PATH_PREFIXES = ['/api/v1/docs', '/admin/queues'];

// JSON responses load nothing and are never framed.
const API_CSP = { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } } as const;

// The pages may run their own inline code and load their own assets, nothing from other origins.
const UI_CSP = {
  useDefaults: false,
  directives: {
    defaultSrc: ["'self'"],
    scriptSrc: ["'self'", "'unsafe-inline'"],
    styleSrc: ["'self'", "'unsafe-inline'"],
    imgSrc: ["'self'", 'data:'],
    fontSrc: ["'self'", 'data:'],
    connectSrc: ["'self'"],
    objectSrc: ["'none'"],
    baseUri: ["'self'"],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
  },
} as const;

/** helmet's headers on every response, errors included; the one place its options live. */
export function securityHeaders(): RequestHandler {
  const api = helmet({ contentSecurityPolicy: API_CSP, xFrameOptions: { action: 'deny' } });
  const ui = helmet({ contentSecurityPolicy: UI_CSP, xFrameOptions: { action: 'deny' } });
  return (req: Request, res: Response, next: NextFunction) => {
    const path = req.path.toLowerCase();
    const isUi = UI_PATH_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
    (isUi ? ui : api)(req, res, next);
  };
}
