import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { consoleSecurityHeaders } from '../core/security/security-headers.js';

export const CONSOLE_PATH = '/console';

// Built by `npm run build` (console/vite.config.ts). From src/console/ (tests) and from dist/console/ (the
// api, the image) alike, two levels up is the project root.
const CONSOLE_ASSETS = fileURLToPath(new URL('../../dist/public/console', import.meta.url));

/**
 * The console (DESIGN 8) at /console: static files of the same origin, under their own strict CSP; the
 * API's JSON responses keep theirs. The page calls the public API with the key the person gives it, or a portal session.
 */
export function mountConsole(app: NestExpressApplication): void {
  app.use(CONSOLE_PATH, consoleSecurityHeaders(app.get<AppConfig>(APP_CONFIG).portalFrameAncestors));
  if (!existsSync(CONSOLE_ASSETS)) return; // not built: /console is a 404 like any unknown path
  app.useStaticAssets(CONSOLE_ASSETS, {
    prefix: CONSOLE_PATH,
    index: 'index.html',
    // Hashed asset names change with their content; the page itself is always checked again.
    setHeaders: (res, path) =>
      res.setHeader('cache-control', path.endsWith('.html') ? 'no-cache' : 'public, max-age=31536000, immutable'),
  });
}
