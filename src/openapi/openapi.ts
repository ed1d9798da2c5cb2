import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { API_MODULES } from '../app.module.js';
import { API_KEY_HEADER } from '../auth/api-key.js';
import { PORTAL_SESSION_HEADER } from '../portal/portal-token.js';
import { apiSecurityHeaders, uiSecurityHeaders } from '../core/security/security-headers.js';
import { COMMON_ERROR_STATUSES, errorResponse, errorSchemas } from './error-responses.js';
import { addIdempotencyKey } from './idempotency-key.js';
import { addOutgoingWebhooks } from './outgoing-webhook.js';

const API_KEY_SCHEME = 'apiKey';
const PORTAL_SESSION_SCHEME = 'portalSession';

const DESCRIPTION = [
  'Manage the webhooks and calculators of the workspace an API key belongs to.',
  '',
  `Every operation needs the key in the \`${API_KEY_HEADER}\` header, or a portal session in`,
  `\`${PORTAL_SESSION_HEADER}\` (see createPortalLink; not for portal links, and read-only ones may not write:`,
  '403 `forbidden`). Errors are JSON',
  '`{ "error": { "code", "message", "details"? } }` (a 400 on GET /webhooks excepted, which is an empty',
  '`text/plain` body). A method a path does not take is answered with 405 `method_not_allowed`',
  '(`MethodNotAllowedError`) and an `Allow` header.',
].join('\n');

type SchemaNode = Record<string, unknown>;

/** A schema that lists its properties lists all of them: the API neither sends nor accepts others. */
function closeObjectSchemas(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(closeObjectSchemas);
  if (typeof node !== 'object' || node === null) return;
  const schema = node as SchemaNode;
  if (typeof schema.properties === 'object' && schema.additionalProperties === undefined) {
    schema.additionalProperties = false;
  }
  Object.values(schema).forEach(closeObjectSchemas);
}

/** The key guard, the rate limiter and the exception filter can answer any operation. */
function addCommonErrors(document: OpenAPIObject): void {
  for (const pathItem of Object.values(document.paths)) {
    for (const operation of Object.values(pathItem)) {
      for (const status of COMMON_ERROR_STATUSES) operation.responses[status] ??= errorResponse(status);
    }
  }
}

/**
 * A webhook is not replaced (its url and calculators stay as registered; DESIGN 3 and 10), and PUT on one
 * answers 405; documented as an operation so a client (or one generated from the document) learns it.
 * The exception filter answers it before any guard runs, so without a key too.
 */
function addUnsupportedWebhookReplace(document: OpenAPIObject): void {
  const item = document.paths['/webhooks/{webhookId}'];
  const parameters = item.get?.parameters;
  item.put = {
    operationId: 'replaceWebhookNotSupported',
    tags: ['webhooks'],
    summary: 'Not supported: a webhook is not replaced',
    description:
      'Always answered 405 `method_not_allowed`, with an `Allow` header naming the methods the path takes. ' +
      'PATCH changes its settings; to change its url or calculators, remove it and register it again.',
    security: [],
    ...(parameters ? { parameters } : {}),
    responses: { 405: errorResponse(405) },
  };
}

/**
 * DESIGN 10: a read-only portal session may not write, so any write may answer 403; the portal-link
 * operations take an API key only, and the exchange no credential but its token (nor an Idempotency-Key:
 * the keys are a workspace's, and the exchange is single-use by itself).
 */
function describePortalAccess(document: OpenAPIObject): void {
  for (const pathItem of Object.values(document.paths)) {
    for (const method of ['post', 'put', 'patch', 'delete'] as const) {
      const operation = pathItem[method];
      // An operation with no security (a 405 answered before any guard) never meets a session.
      if (operation && operation.security?.length !== 0) operation.responses[403] ??= errorResponse(403);
    }
  }
  for (const path of ['/portal-links', '/portal-links/{portalLinkId}']) {
    for (const operation of Object.values(document.paths[path])) operation.security = [{ [API_KEY_SCHEME]: [] }];
  }
  const exchange = document.paths['/portal-sessions'].post!;
  exchange.security = [];
  delete exchange.responses[403];
  exchange.parameters = exchange.parameters?.filter((p) => !('name' in p) || p.name !== 'Idempotency-Key');
  delete exchange.responses[409];
}

/**
 * Paths relative to the `/<prefix>` server: the router mounts the API modules under it (a preview
 * app, which the OpenAPI writer builds without any connection, has not applied the router's prefix).
 */
function relativeToServer(document: OpenAPIObject, prefix: string): void {
  const base = `/${prefix}`;
  const relative = (path: string) => (path === base || path.startsWith(`${base}/`) ? path.slice(base.length) : path);
  document.paths = Object.fromEntries(
    Object.entries(document.paths).map(([path, item]) => [relative(path) || '/', item]),
  );
}

/** The OpenAPI 3.1 document of the API, paths relative to the `/<prefix>` server. */
export function buildOpenApiDocument(app: INestApplication, prefix: string): OpenAPIObject {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Workspace management API')
    .setDescription(DESCRIPTION)
    .setVersion('1.0')
    .addTag('webhooks', 'Destinations that receive `newSubmission` events')
    .addTag('calculators', "The workspace's calculators")
    .addTag('workspace', 'The workspace the API key belongs to')
    .addTag('submissions', 'Extension: how submissions enter (server-side integrations)')
    .addTag('deliveries', 'Extension: the delivery log of a webhook, and manual redelivery')
    .addTag('operational-webhooks', 'Extension: receivers of the workspace’s operational events (see `webhooks`)')
    .addTag('portal', 'Extension: single-use links to the console, signed in for the workspace')
    .addServer(`/${prefix}`)
    .addApiKey({ type: 'apiKey', in: 'header', name: API_KEY_HEADER }, API_KEY_SCHEME)
    .addApiKey({ type: 'apiKey', in: 'header', name: PORTAL_SESSION_HEADER }, PORTAL_SESSION_SCHEME)
    .addSecurityRequirements(API_KEY_SCHEME)
    .addSecurityRequirements(PORTAL_SESSION_SCHEME)
    .build();
  config.components = { ...config.components, schemas: errorSchemas() };
  const document = SwaggerModule.createDocument(app, config, { include: API_MODULES });
  relativeToServer(document, prefix);
  addCommonErrors(document);
  addUnsupportedWebhookReplace(document);
  addIdempotencyKey(document);
  describePortalAccess(document);
  addOutgoingWebhooks(document);
  closeObjectSchemas(document.paths);
  closeObjectSchemas(document.components);
  return document;
}

/** Serves the document at `/<prefix>/openapi.json` and Swagger UI (assets served locally) at `/<prefix>/docs`, no key needed. */
export function setupOpenApi(app: NestExpressApplication, prefix: string): void {
  app.use(`/${prefix}/openapi.json`, apiSecurityHeaders());
  app.use(`/${prefix}/docs`, uiSecurityHeaders());
  SwaggerModule.setup(`${prefix}/docs`, app, () => buildOpenApiDocument(app, prefix), {
    jsonDocumentUrl: `${prefix}/openapi.json`,
    raw: ['json'],
    customSiteTitle: 'Workspace management API',
    swaggerOptions: { validatorUrl: null, displayOperationId: true },
  });
}
