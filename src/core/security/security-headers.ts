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

// The console (DESIGN 8): its own scripts, styles and API only; no inline code, no eval, never framed.
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

/** helmet's headers for the console: a strict CSP, no referrer (its hash names webhooks and deliveries). */
export const consoleSecurityHeaders = (): RequestHandler =>
  helmet({
    contentSecurityPolicy: CONSOLE_CSP,
    xFrameOptions: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
  });
