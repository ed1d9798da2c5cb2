import type { RequestHandler } from 'express';
import helmet from 'helmet';

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

// The console (DESIGN 8): its own scripts, styles and API only; no inline code, no eval; framed only by
// the PORTAL_FRAME_ANCESTORS (DESIGN 10), by nobody when there are none.
const CONSOLE_CSP = {
  useDefaults: false,
  directives: {
    defaultSrc: ["'none'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'"],
    imgSrc: ["'self'"],
    connectSrc: ["'self'"],
    baseUri: ["'none'"],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
  },
} as const;

/** helmet's headers for JSON responses, errors included; the one place its options live. */
export const apiSecurityHeaders = (): RequestHandler =>
  helmet({ contentSecurityPolicy: API_CSP, xFrameOptions: { action: 'deny' } });

/** helmet's headers for the HTML pages: the API reference and the queue dashboard. */
export const uiSecurityHeaders = (): RequestHandler =>
  helmet({ contentSecurityPolicy: UI_CSP, xFrameOptions: { action: 'deny' } });

/**
 * helmet's headers for the console: a strict CSP, no referrer (its hash names webhooks and deliveries).
 * X-Frame-Options cannot name origins, so with embedders allowed only frame-ancestors speaks.
 */
export const consoleSecurityHeaders = (frameAncestors: string[]): RequestHandler =>
  helmet({
    contentSecurityPolicy:
      frameAncestors.length === 0
        ? CONSOLE_CSP
        : { ...CONSOLE_CSP, directives: { ...CONSOLE_CSP.directives, frameAncestors } },
    xFrameOptions: frameAncestors.length === 0 ? { action: 'deny' } : false,
    referrerPolicy: { policy: 'no-referrer' },
  });
