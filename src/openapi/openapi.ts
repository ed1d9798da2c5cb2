import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { API_MODULES } from '../app.module.js';
import { API_KEY_HEADER } from '../auth/api-key.js';
import { apiSecurityHeaders, uiSecurityHeaders } from '../core/security/security-headers.js';
import { COMMON_ERROR_STATUSES, errorResponse, errorSchemas } from './error-responses.js';
import { addIdempotencyKey } from './idempotency-key.js';
import { addOutgoingWebhooks } from './outgoing-webhook.js';

const API_KEY_SCHEME = 'apiKey';

const DESCRIPTION = [
  'Manage the webhooks and calculators of the workspace an API key belongs to.',
  '',
  `Every operation needs the key in the \`${API_KEY_HEADER}\` header. Errors are JSON`,
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
 * DESIGN 3: a webhook has no update, and PUT or PATCH on one answers 405; documented as operations so a
 * client (or one generated from the document) learns it. The exception filter answers them before any
 * guard runs, so without a key too.
 */
function addUnsupportedWebhookUpdates(document: OpenAPIObject): void {
  const item = document.paths['/webhooks/{webhookId}'];
  const parameters = item.get?.parameters;
  for (const [method, operationId] of [
    ['put', 'replaceWebhookNotSupported'],
    ['patch', 'updateWebhookNotSupported'],
  ] as const) {
    item[method] = {
      operationId,
      tags: ['webhooks'],
      summary: 'Not supported: a webhook has no update',
      description:
        'Always answered 405 `method_not_allowed`, with an `Allow` header naming the methods the path takes. ' +
        'To change a webhook, remove it and register it again.',
      security: [],
      ...(parameters ? { parameters } : {}),
      responses: { 405: errorResponse(405) },
    };
  }
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
    .addServer(`/${prefix}`)
    .addApiKey({ type: 'apiKey', in: 'header', name: API_KEY_HEADER }, API_KEY_SCHEME)
    .addSecurityRequirements(API_KEY_SCHEME)
    .build();
  config.components = { ...config.components, schemas: errorSchemas() };
  const document = SwaggerModule.createDocument(app, config, { include: API_MODULES });
  relativeToServer(document, prefix);
  addCommonErrors(document);
  addUnsupportedWebhookUpdates(document);
  addIdempotencyKey(document);
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
