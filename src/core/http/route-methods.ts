import { Injectable, RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, MODULE_PATH, PATH_METADATA } from '@nestjs/common/constants.js';
import { DiscoveryService, MetadataScanner, ModulesContainer } from '@nestjs/core';
import { match, type MatchFunction } from 'path-to-regexp';

interface Route {
  matches: MatchFunction<object>;
  methods: Set<string>;
}

const asArray = (value: string | string[] | undefined): string[] =>
  value === undefined ? [''] : Array.isArray(value) ? value : [value];

const join = (...parts: string[]): string =>
  `/${parts
    .flatMap((part) => part.split('/'))
    .filter(Boolean)
    .join('/')}`;

/**
 * The methods each route of the app takes, read once from Nest's own route metadata (module path,
 * controller path, handler path and method), so a 404 can tell an unknown path from a known path
 * called with a method it does not take (405 with an `Allow` header).
 */
@Injectable()
export class RouteMethods {
  private routes?: Route[];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly modules: ModulesContainer,
  ) {}

  /** Methods some route accepts on this path, HEAD with GET, sorted; empty when the path is unknown. */
  allowedOn(path: string): string[] {
    const methods = new Set<string>();
    for (const route of (this.routes ??= this.explore())) {
      if (route.matches(path)) route.methods.forEach((m) => methods.add(m));
    }
    if (methods.has('GET')) methods.add('HEAD');
    return [...methods].sort();
  }

  private explore(): Route[] {
    const byPath = new Map<string, Set<string>>();
    for (const { metatype, instance, host } of this.discovery.getControllers()) {
      if (!metatype || !instance || !host) continue;
      const modulePath: string | undefined =
        Reflect.getMetadata(MODULE_PATH + this.modules.applicationId, host.metatype) ??
        Reflect.getMetadata(MODULE_PATH, host.metatype);
      const controllerPaths = asArray(Reflect.getMetadata(PATH_METADATA, metatype));
      const prototype = Object.getPrototypeOf(instance) as Record<string, unknown>;
      for (const name of this.scanner.getAllMethodNames(prototype)) {
        const handler = prototype[name] as object;
        const method: RequestMethod | undefined = Reflect.getMetadata(METHOD_METADATA, handler);
        if (method === undefined || Reflect.getMetadata(PATH_METADATA, handler) === undefined) continue;
        for (const controllerPath of controllerPaths) {
          for (const handlerPath of asArray(Reflect.getMetadata(PATH_METADATA, handler))) {
            const path = join(modulePath ?? '', controllerPath, handlerPath);
            const methods = byPath.get(path) ?? new Set<string>();
            methods.add(RequestMethod[method]);
            byPath.set(path, methods);
          }
        }
      }
    }
    // Express matches routes case-insensitively and with or without a trailing slash; so do these.
    return [...byPath].map(([path, methods]) => ({ matches: match(path, { sensitive: false }), methods }));
  }
}
