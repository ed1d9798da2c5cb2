import type { Request } from 'express';

interface RouterLayer {
  route?: { methods: Record<string, boolean> };
  match(path: string): boolean;
}

/** The request path as the client sent it (handlers mounted under the prefix see it shortened). */
export const fullPath = (req: Request): string => req.originalUrl.split('?')[0];

/** Methods that some route of the app accepts on this path (empty when the path is unknown). */
export function allowedMethods(req: Request): string[] {
  const stack: RouterLayer[] = (req.app as unknown as { router?: { stack: RouterLayer[] } }).router?.stack ?? [];
  const path = fullPath(req);
  const methods = new Set<string>();
  for (const layer of stack) {
    if (!layer.route || !layer.match(path)) continue;
    for (const [method, on] of Object.entries(layer.route.methods)) {
      if (on && method !== '_all') methods.add(method.toUpperCase());
    }
  }
  if (methods.has('GET')) methods.add('HEAD');
  return [...methods].sort();
}
