import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import type { Response } from 'supertest';
import { DELIVERY_STATUSES } from '../../src/delivery/delivery.entity.js';
import { bodyHash } from '../../src/idempotency/idempotency-key.js';
import { WebhooksService } from '../../src/webhooks/webhooks.service.js';
import { client, type Client } from '../support/management-api.js';
import {
  OpenApiContract,
  type AnswerRequest,
  type AnswerResponse,
  type OpenApiDocument,
} from '../support/openapi-contract.js';
import { Receiver, waitFor } from '../support/receiver.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

type Method = 'get' | 'post' | 'delete' | 'put' | 'patch';
interface MediaType {
  schema: object;
}
interface ResponseObject {
  content?: Record<string, MediaType>;
  headers?: Record<string, object>;
}
interface Operation {
  operationId: string;
  parameters: { name: string; in: string; required?: boolean; schema: Record<string, unknown> }[];
  requestBody?: { content: Record<string, MediaType> };
  responses: Record<string, ResponseObject>;
}
interface Document {
  openapi: string;
  info: { version: string };
  servers: { url: string }[];
  security: Record<string, string[]>[];
  paths: Record<string, Partial<Record<Method, Operation>>>;
  webhooks: Record<string, { post: Operation }>;
  components: {
    schemas: Record<string, { properties?: Record<string, Record<string, unknown>>; required?: string[] } & object>;
    securitySchemes: Record<string, object>;
  };
}

const SPEC_OPERATIONS = [
  'GET /webhooks',
  'POST /webhooks',
  'GET /webhooks/{webhookId}',
  'DELETE /webhooks/{webhookId}',
  'GET /calculators',
  'GET /me',
];
const EXTENSION_OPERATIONS = [
  'GET /webhooks/{webhookId}/secret',
  'POST /calculators/{calculatorId}/submissions',
  'GET /webhooks/{webhookId}/deliveries',
  'GET /webhooks/{webhookId}/deliveries/{deliveryId}',
  'POST /webhooks/{webhookId}/deliveries/{deliveryId}/retry',
  'GET /deliveries',
  'GET /deliveries/{deliveryId}',
  'POST /webhooks/{webhookId}/recover',
  'GET /webhooks/{webhookId}/recoveries/{recoveryId}',
  'GET /webhooks/{webhookId}/health',
  'POST /webhooks/{webhookId}/disable',
  'POST /webhooks/{webhookId}/enable',
  'POST /webhooks/{webhookId}/test',
  'POST /webhooks/{webhookId}/secret/rotate',
  'PATCH /webhooks/{webhookId}',
  'GET /webhooks/{webhookId}/settings',
  'GET /audit-events',
  'POST /portal-links',
  'GET /portal-links',
  'DELETE /portal-links/{portalLinkId}',
  'POST /portal-sessions',
  'POST /operational-webhooks',
  'GET /operational-webhooks',
  'GET /operational-webhooks/{operationalWebhookId}',
  'DELETE /operational-webhooks/{operationalWebhookId}',
  'GET /calculators/{calculatorId}/submissions',
  'GET /submissions/{submissionId}',
];
/** Documented only for its 405: a webhook is not replaced (DESIGN 3; PATCH changes its settings). */
const UNSUPPORTED_OPERATIONS = ['PUT /webhooks/{webhookId}'];
/**
 * Answered by the rate limiter, the exception filter, the Idempotency-Key check (every POST) and the guard's
 * refusal of a portal session (every write), so documented on every operation but exercised once.
 */
const SAMPLED_STATUSES = ['403', '409', '429', '500', '503'];

const pointer = (...segments: string[]) => segments.map((s) => s.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

const operationsOf = (doc: Document): string[] =>
  Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`));

/** Validates real responses against the served document, remembering which documented responses were seen. */
class Conformance {
  private readonly ajv = new Ajv2020.default({ strict: false, allErrors: true });
  private readonly validators = new Map<string, ValidateFunction>();
  readonly seen = new Set<string>();

  constructor(readonly doc: Document) {
    addFormats.default(this.ajv);
    this.ajv.addSchema({ ...doc, $id: 'openapi.json' });
  }

  /** `operation` is `METHOD /path/{template}`, as the document spells it. */
  check(res: Response, operation: string): void {
    const [method, path] = operation.split(' ');
    const op = this.doc.paths[path]?.[method.toLowerCase() as Method];
    if (!op) throw new Error(`${operation} is not in the document`);
    const status = String(res.status);
    const documented = op.responses[status];
    if (!documented) throw new Error(`${operation} answered ${status}, not documented: ${res.text}`);
    const mediaType = String(res.headers['content-type'] ?? '').split(';')[0];
    expect(Object.keys(documented.content ?? {})).toContain(mediaType);
    const body = mediaType === 'application/json' ? res.body : res.text;
    this.validate(
      pointer('paths', path, method.toLowerCase(), 'responses', status, 'content', mediaType, 'schema'),
      body,
      `${operation} ${status}`,
    );
    for (const header of Object.keys(documented.headers ?? {})) {
      expect({ [header]: res.headers[header.toLowerCase()] }).toEqual({ [header]: expect.any(String) });
    }
    this.seen.add(`${operation} ${status}`);
  }

  validate(schemaPointer: string, body: unknown, what: string): void {
    let validate = this.validators.get(schemaPointer);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `openapi.json#/${schemaPointer}` });
      this.validators.set(schemaPointer, validate);
    }
    if (!validate(body)) {
      throw new Error(
        `${what}: body does not match the document: ${this.ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`,
      );
    }
  }

  documented(): string[] {
    return operationsOf(this.doc).flatMap((operation) => {
      const [method, path] = operation.split(' ');
      const op = this.doc.paths[path][method.toLowerCase() as Method]!;
      return Object.keys(op.responses).map((status) => `${operation} ${status}`);
    });
  }
}

describe('OpenAPI document', () => {
  let t: TestApp;
  let doc: Document;
  let conformance: Conformance;
  let receiver: Receiver;
  let api: Client;
  let workspaceId: string;

  beforeAll(async () => {
    receiver = await Receiver.start(() => ({ status: 200, body: 'ok' }));
    t = await createTestApp({
      WORKER_ENABLED: 'true',
      DELIVERY_RETRY_SCHEDULE: '100ms,200ms',
      DELIVERY_TIMEOUT_MS: '1000',
      SWEEP_INTERVAL_MS: '200',
    });
    const res = await t.http().get('/api/v1/openapi.json');
    expect(res.status).toBe(200);
    doc = res.body as Document;
    conformance = new Conformance(doc);
    const { workspace, key } = await createWorkspace(t);
    workspaceId = workspace.id;
    api = client(t, key);
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  describe('GET /api/v1/openapi.json', () => {
    it('is OpenAPI 3.1, interface version 1.0, served without a key relative to /api/v1', () => {
      expect(doc.openapi).toBe('3.1.0');
      expect(doc.info.version).toBe('1.0');
      expect(doc.servers).toEqual([{ url: '/api/v1' }]);
    });

    it('applies the x-ac-api-key scheme, or a portal session, to every operation but the portal ones', () => {
      expect(doc.components.securitySchemes).toEqual({
        apiKey: { type: 'apiKey', in: 'header', name: 'x-ac-api-key' },
        portalSession: { type: 'apiKey', in: 'header', name: 'x-ac-portal-session' },
      });
      expect(doc.security).toEqual([{ apiKey: [] }, { portalSession: [] }]);
      const security = (operation: string) => {
        const [method, path] = operation.split(' ');
        return (doc.paths[path][method.toLowerCase() as Method] as Operation & { security?: unknown }).security;
      };
      for (const operation of ['POST /portal-links', 'GET /portal-links', 'DELETE /portal-links/{portalLinkId}']) {
        expect(security(operation)).toEqual([{ apiKey: [] }]);
      }
      expect(security('POST /portal-sessions')).toEqual([]);
      const exchange = doc.paths['/portal-sessions'].post!;
      expect(exchange.parameters ?? []).toEqual([]);
      expect(Object.keys(exchange.responses).sort()).toEqual(['200', '400', '401', '413', '429', '500', '503']);
    });

    it('lists exactly the six spec operations and the extensions, and the unsupported updates', () => {
      expect(operationsOf(doc).sort()).toEqual(
        [...SPEC_OPERATIONS, ...EXTENSION_OPERATIONS, ...UNSUPPORTED_OPERATIONS].sort(),
      );
    });

    it('documents PUT on a webhook as 405 with an Allow header, answered without a key', () => {
      for (const operation of UNSUPPORTED_OPERATIONS) {
        const [method, path] = operation.split(' ');
        const op = doc.paths[path][method.toLowerCase() as Method]! as Operation & { security: unknown[] };
        expect(Object.keys(op.responses)).toEqual(['405']);
        expect(op.responses['405'].headers).toHaveProperty('Allow');
        expect(op.responses['405'].content).toEqual({
          'application/json': { schema: { $ref: '#/components/schemas/MethodNotAllowedError' } },
        });
        expect(op.security).toEqual([]);
      }
    });

    it('documents the webhook with exactly the seven fields of spec 2.1, all required, nothing else', () => {
      const webhook = doc.components.schemas.Webhook;
      const seven = ['id', 'name', 'createdAt', 'updatedAt', 'url', 'source', 'workspaceId'];
      expect(Object.keys(webhook.properties!)).toEqual(seven);
      expect(webhook.required).toEqual(seven);
      expect(webhook).toMatchObject({ additionalProperties: false });
      expect(webhook.properties!.source.enum).toEqual([
        'user',
        'automation_platform_1',
        'automation_platform_2',
        'automation_platform_3',
        'automation_platform_4',
      ]);
    });

    it('documents the list item as the seven fields plus calculators and triggers', () => {
      const item = doc.components.schemas.WebhookListItem;
      expect(Object.keys(item.properties!)).toEqual([
        ...Object.keys(doc.components.schemas.Webhook.properties!),
        'calculators',
        'triggers',
      ]);
      expect(Object.keys(doc.components.schemas.WebhookCalculator.properties!)).toEqual(['id', 'name']);
      expect(Object.keys(doc.components.schemas.WebhookTrigger.properties!)).toEqual(['type', 'webhookId']);
    });

    it('documents the calculator with the 21 fields of spec 2.4, the spec nullable ones nullable', () => {
      const calculator = doc.components.schemas.Calculator;
      expect(Object.keys(calculator.properties!)).toHaveLength(21);
      expect(calculator.required).toHaveLength(21);
      const nullable = Object.entries(calculator.properties!)
        .filter(([, schema]) => Array.isArray(schema.type) && schema.type.includes('null'))
        .map(([name]) => name);
      expect(nullable).toEqual([
        'slug',
        'templateVisibility',
        'templateCalculatorId',
        'lastImpressionAt',
        'lastSubmissionAt',
      ]);
    });

    it('documents GET /me as the unwrapped workspace', () => {
      const schema = doc.paths['/me'].get!.responses['200'].content!['application/json'].schema;
      expect(schema).toEqual({ $ref: '#/components/schemas/Workspace' });
      expect(doc.components.schemas.Workspace.required).toEqual(['id', 'name', 'createdAt', 'updatedAt']);
    });

    it('types limit and offset of GET /calculators as optional int32 query parameters', () => {
      const params = doc.paths['/calculators'].get!.parameters;
      expect(params.map((p) => [p.name, p.in, p.required, p.schema.type, p.schema.format])).toEqual([
        ['limit', 'query', false, 'integer', 'int32'],
        ['offset', 'query', false, 'integer', 'int32'],
      ]);
    });

    it('documents the query of each list with its type, bounds and default', () => {
      const query = (path: string) =>
        (doc.paths[path].get!.parameters ?? [])
          .filter((p) => p.in === 'query')
          .map(({ name, required, schema }) => ({ name, required, schema }))
          .sort((a, b) => a.name.localeCompare(b.name));
      const INT32 = { type: 'integer', format: 'int32' };
      const limit = { name: 'limit', required: false, schema: { ...INT32, minimum: 1, default: 50 } };
      const offset = { name: 'offset', required: false, schema: { ...INT32, minimum: 0, default: 0 } };
      const status = { name: 'status', required: false, schema: { type: 'string', enum: [...DELIVERY_STATUSES] } };
      const text = (name: string, format?: string) => ({
        name,
        required: false,
        schema: { type: 'string', ...(format ? { format } : {}) },
      });
      expect(query('/calculators')).toEqual([limit, offset]);
      expect(query('/webhooks/{webhookId}/deliveries')).toEqual([limit, offset, status]);
      expect(query('/deliveries')).toEqual([
        text('calculatorId'),
        text('cursor'),
        limit,
        text('since', 'date-time'),
        status,
        {
          name: 'statusCode',
          required: false,
          schema: { type: 'string', pattern: '^[1-5](\\d\\d|xx)$', example: '5xx' },
        },
        text('submissionId'),
        text('until', 'date-time'),
        text('webhookId'),
      ]);
      expect(query('/calculators/{calculatorId}/submissions')).toEqual([
        text('cursor'),
        { name: 'filter', required: false, schema: expect.objectContaining({ type: 'string', maxLength: 1000 }) },
        { ...limit, schema: { ...limit.schema, default: 10 } },
        text('since', 'date-time'),
        text('until', 'date-time'),
      ]);
      expect(query('/webhooks')).toEqual([]);
      // The query DTOs describe parameters only; they are not schemas of a body or response.
      expect(Object.keys(doc.components.schemas).filter((name) => /Query/.test(name))).toEqual([]);
    });

    it('documents the POST /webhooks body with its required fields and accepted sources', () => {
      const body = doc.components.schemas.CreateWebhook;
      expect(Object.keys(body.properties!)).toEqual(['url', 'triggers', 'calculators', 'name', 'source']);
      // triggers has a default and may be omitted: a client generated from the document must not force it.
      expect(body.required).toEqual(['url', 'calculators']);
      expect(body.properties!.triggers.default).toEqual(['newSubmission']);
      expect(body.properties!.source.enum).toEqual(expect.arrayContaining(['user', 'automation_platform_4', 'zapier']));
    });

    it('documents the 400 of GET /webhooks as an empty text/plain body', () => {
      expect(doc.paths['/webhooks'].get!.responses['400'].content).toEqual({
        'text/plain': { schema: { type: 'string', maxLength: 0 } },
      });
    });
  });

  describe('GET /api/v1/docs', () => {
    it('serves the reference page and its assets from this server, without a key', async () => {
      const page = await t.http().get('/api/v1/docs');
      expect(page.status).toBe(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      const assets = [...page.text.matchAll(/(?:src|href)=["']([^"']+)["']/g)].map((m) => m[1]);
      expect(assets.length).toBeGreaterThan(0);
      for (const asset of assets) {
        expect(asset).not.toMatch(/^(https?:)?\/\//);
        const res = await t.http().get(new URL(asset, 'http://localhost/api/v1/docs/').pathname);
        expect({ asset, status: res.status }).toEqual({ asset, status: 200 });
      }
    });
  });

  describe('responses conform to the document', () => {
    let calculatorId: string;
    let webhookId: string;

    it('GET /me', async () => {
      conformance.check(await api.get('/me'), 'GET /me');
      conformance.check(await api.get('/me').set('content-type', 'application/json').send('{bad'), 'GET /me');
    });

    it('GET /calculators, with set and null nullable fields', async () => {
      const plain = await createCalculator(t, workspaceId);
      const withSlug = await createCalculator(t, workspaceId);
      calculatorId = plain.id;
      await t.dataSource.query(
        `UPDATE calculators SET slug = 'pricing', template_visibility = 'public', template_calculator_id = $2,
           last_impression_at = now() WHERE id = $1`,
        [withSlug.id, plain.id],
      );
      const res = await api.get('/calculators');
      expect(res.body.data).toHaveLength(2);
      conformance.check(res, 'GET /calculators');
      conformance.check(await api.get('/calculators?limit=abc'), 'GET /calculators');
    });

    it('POST /webhooks', async () => {
      const res = await api.post('/webhooks', { url: receiver.url, calculators: [calculatorId], source: 'zapier' });
      conformance.check(res, 'POST /webhooks');
      webhookId = res.body.data.id;
      conformance.check(await api.post('/webhooks', { url: 'nope', calculators: [] }), 'POST /webhooks');
      const huge = { url: receiver.url, calculators: [calculatorId], name: 'x'.repeat(1024 * 1024 + 1) };
      conformance.check(await api.post('/webhooks', huge), 'POST /webhooks');
    });

    it('GET /webhooks', async () => {
      const res = await api.get('/webhooks');
      expect(res.body.data).toHaveLength(1);
      conformance.check(res, 'GET /webhooks');
      conformance.check(
        await api.get('/webhooks').set('content-type', 'application/json').send('{bad'),
        'GET /webhooks',
      );
    });

    it('GET /webhooks/{webhookId} and its secret', async () => {
      for (const [path, op] of [
        [`/webhooks/${webhookId}`, 'GET /webhooks/{webhookId}'],
        [`/webhooks/${webhookId}/secret`, 'GET /webhooks/{webhookId}/secret'],
      ]) {
        conformance.check(await api.get(path), op);
        conformance.check(await api.get(path).set('content-type', 'application/json').send('{bad'), op);
        conformance.check(await api.get(path.replace(webhookId, 'unknownwebhook')), op);
      }
    });

    it('POST /calculators/{calculatorId}/submissions', async () => {
      const op = 'POST /calculators/{calculatorId}/submissions';
      conformance.check(await api.post(`/calculators/${calculatorId}/submissions`, { data: { answer: 42 } }), op);
      conformance.check(await api.post(`/calculators/${calculatorId}/submissions`, { data: 'nope' }), op);
      conformance.check(await api.post('/calculators/unknowncalculator/submissions', { data: {} }), op);
      const huge = { data: { text: 'x'.repeat(256 * 1024) } };
      conformance.check(await api.post(`/calculators/${calculatorId}/submissions`, huge), op);
    });

    it('the delivery log: list, one delivery with its attempts, retry', async () => {
      const list = 'GET /webhooks/{webhookId}/deliveries';
      const one = 'GET /webhooks/{webhookId}/deliveries/{deliveryId}';
      const retry = 'POST /webhooks/{webhookId}/deliveries/{deliveryId}/retry';
      const base = `/webhooks/${webhookId}/deliveries`;
      const delivered = await waitFor(async () => {
        const res = await api.get(base);
        return res.body.data?.[0]?.status === 'succeeded' ? res : null;
      });
      conformance.check(delivered, list);
      conformance.check(await api.get(`${base}?status=bogus`), list);
      conformance.check(await api.get('/webhooks/unknownwebhook/deliveries'), list);
      const deliveryId = delivered.body.data[0].id as string;

      const detail = await api.get(`${base}/${deliveryId}`);
      expect(detail.body.data.attempts).toHaveLength(1);
      conformance.check(detail, one);
      conformance.check(await api.get(`${base}/unknowndelivery`), one);
      conformance.check(
        await api.get(`${base}/${deliveryId}`).set('content-type', 'application/json').send('{bad'),
        one,
      );

      receiver.behaviour = () => ({ status: 200, delayMs: 500 }); // keeps the retried delivery pending a while
      conformance.check(await api.post(`${base}/${deliveryId}/retry`), retry);
      conformance.check(await api.post(`${base}/${deliveryId}/retry`), retry); // still pending: moved to now
      conformance.check(await api.post(`${base}/unknowndelivery/retry`), retry);
    });

    it('the webhooks section: the request a receiver got matches newSubmission, body and headers', async () => {
      const webhook = doc.webhooks.newSubmission.post;
      const [delivered] = receiver.requests;
      conformance.validate(
        pointer('webhooks', 'newSubmission', 'post', 'requestBody', 'content', 'application/json', 'schema'),
        JSON.parse(delivered.body),
        'newSubmission body',
      );
      const headerSchema = (name: string) =>
        pointer(
          'webhooks',
          'newSubmission',
          'post',
          'parameters',
          String(webhook.parameters.findIndex((p) => p.name === name)),
          'schema',
        );
      const headers = webhook.parameters.filter((p) => p.in === 'header');
      expect(headers.map((p) => p.name).sort()).toEqual(
        ['content-type', 'user-agent', 'webhook-id', 'webhook-signature', 'webhook-timestamp'].sort(),
      );
      for (const { name, schema } of headers) {
        conformance.validate(headerSchema(name), delivered.headers[name], `newSubmission header ${name}`);
        expect(schema).toEqual(expect.objectContaining({ type: 'string' }));
      }
      const rotationOverlap = `${delivered.headers['webhook-signature']} ${delivered.headers['webhook-signature']}`;
      conformance.validate(headerSchema('webhook-signature'), rotationOverlap, 'two signatures');
      expect(() => conformance.validate(headerSchema('webhook-signature'), 'v1,abc= v2,abc=', 'v2')).toThrow();
      expect(Object.keys(webhook.responses).sort()).toEqual(['2XX', '410', '429', '503', 'default']);
    });

    it('the audit log', async () => {
      const list = 'GET /audit-events';
      const page = await api.get('/audit-events?limit=1');
      expect(page.body.data).toHaveLength(1);
      conformance.check(page, list);
      conformance.check(await api.get('/audit-events?action=nothing'), list);
    });

    it('the workspace delivery log and recovery', async () => {
      const list = 'GET /deliveries';
      const one = 'GET /deliveries/{deliveryId}';
      const recover = 'POST /webhooks/{webhookId}/recover';
      const recovery = 'GET /webhooks/{webhookId}/recoveries/{recoveryId}';
      await api.post(`/calculators/${calculatorId}/submissions`, { data: { second: true } }).expect(200);
      const page = await api.get('/deliveries?limit=1');
      expect(page.body.nextCursor).toEqual(expect.any(String));
      conformance.check(page, list);
      const last = await api.get(`/deliveries?limit=1&cursor=${page.body.nextCursor}`);
      expect(last.body.nextCursor).toBeNull();
      conformance.check(last, list);
      conformance.check(await api.get('/deliveries?cursor=bogus'), list);
      const deliveryId = page.body.data[0].id as string;

      conformance.check(await api.get(`/deliveries/${deliveryId}`), one);
      conformance.check(await api.get('/deliveries/unknowndelivery'), one);
      conformance.check(
        await api.get(`/deliveries/${deliveryId}`).set('content-type', 'application/json').send('{bad'),
        one,
      );

      const since = new Date(Date.now() - 3_600_000).toISOString();
      const running = await api.post(`/webhooks/${webhookId}/recover`, { since });
      conformance.check(running, recover);
      conformance.check(await api.post(`/webhooks/${webhookId}/recover`, { since, dryRun: true }), recover);
      conformance.check(await api.post(`/webhooks/${webhookId}/recover`, { since: 'yesterday' }), recover);
      conformance.check(await api.post('/webhooks/unknownwebhook/recover', { since }), recover);
      const huge = { since, name: 'x'.repeat(1024 * 1024 + 1) };
      conformance.check(await api.post(`/webhooks/${webhookId}/recover`, huge), recover);

      const base = `/webhooks/${webhookId}/recoveries`;
      conformance.check(await api.get(`${base}/${running.body.data.id}`), recovery);
      conformance.check(await api.get(`${base}/unknownrecovery`), recovery);
      conformance.check(
        await api.get(`${base}/${running.body.data.id}`).set('content-type', 'application/json').send('{bad'),
        recovery,
      );
    });

    it('operational webhooks; the webhooks section: the events a receiver got match theirs', async () => {
      const create = 'POST /operational-webhooks';
      const list = 'GET /operational-webhooks';
      const one = 'GET /operational-webhooks/{operationalWebhookId}';
      const remove = 'DELETE /operational-webhooks/{operationalWebhookId}';
      const events = await Receiver.start();
      try {
        const created = await api.post('/operational-webhooks', {
          url: events.url,
          events: ['webhook.disabled', 'webhook.enabled'],
        });
        conformance.check(created, create);
        conformance.check(await api.post('/operational-webhooks', { url: 'nope', events: ['x'] }), create);
        conformance.check(await api.post('/operational-webhooks', { x: 'x'.repeat(1024 * 1024 + 1) }), create);
        conformance.check(await api.get('/operational-webhooks'), list);
        const own = `/operational-webhooks/${created.body.data.id}`;
        for (const op of [one, remove]) {
          const method = op.startsWith('GET') ? 'get' : 'delete';
          conformance.check(await api.request(method, own).set('content-type', 'application/json').send('{bad'), op);
          conformance.check(await api.request(method, '/operational-webhooks/unknownhook'), op);
        }
        conformance.check(await api.get(own), one);

        await api.post(`/webhooks/${webhookId}/disable`).expect(200);
        await api.post(`/webhooks/${webhookId}/enable`).expect(200);
        await waitFor(() => events.requests.length === 2 || null);
        for (const type of ['webhook.disabled', 'webhook.enabled']) {
          const request = events.requests.find((r) => JSON.parse(r.body).type === type)!;
          const schema = pointer('webhooks', type, 'post', 'requestBody', 'content', 'application/json', 'schema');
          conformance.validate(schema, JSON.parse(request.body), `${type} body`);
          expect(doc.webhooks[type].post.parameters).toEqual(doc.webhooks.newSubmission.post.parameters);
          // The workspace's log shows the event's delivery, its payload the event.
          const logged = await api.get(`/deliveries/${request.headers['webhook-id'] as string}`);
          expect(logged.body.data.payload).toEqual(JSON.parse(request.body));
          conformance.check(logged, 'GET /deliveries/{deliveryId}');
        }
        conformance.check(await api.delete(own), remove);
      } finally {
        await events.close();
      }
    });

    it('health, pause, test event and secret rotation (DESIGN 7); retry on a disabled webhook', async () => {
      const op = (name: string) => `${name.startsWith('health') ? 'GET' : 'POST'} /webhooks/{webhookId}/${name}`;
      const own = `/webhooks/${webhookId}`;
      const huge = { x: 'x'.repeat(1024 * 1024 + 1) };
      conformance.check(await api.get(`${own}/health`), op('health'));
      conformance.check(
        await api.get(`${own}/health`).set('content-type', 'application/json').send('{bad'),
        op('health'),
      );
      conformance.check(await api.get('/webhooks/unknownwebhook/health'), op('health'));
      conformance.check(await api.post(`${own}/secret/rotate`, { overlapSeconds: 60 }), op('secret/rotate'));
      conformance.check(await api.post(`${own}/secret/rotate`, { overlapSeconds: -1 }), op('secret/rotate'));
      conformance.check(await api.post('/webhooks/unknownwebhook/secret/rotate'), op('secret/rotate'));
      conformance.check(await api.post(`${own}/secret/rotate`, huge), op('secret/rotate'));
      conformance.check(await api.post(`${own}/test`), op('test'));
      for (const name of ['disable', 'enable', 'test']) {
        conformance.check(await api.post(`${own}/${name}`, { unknown: 1 }), op(name));
        conformance.check(await api.post(`/webhooks/unknownwebhook/${name}`), op(name));
        conformance.check(await api.post(`${own}/${name}`, huge), op(name));
      }
      const [{ id: deliveryId }] = (await api.get(`${own}/deliveries`)).body.data as { id: string }[];
      conformance.check(await api.post(`${own}/disable`), op('disable'));
      conformance.check(await api.post(`${own}/test`), op('test')); // disabled: 400
      const retry = 'POST /webhooks/{webhookId}/deliveries/{deliveryId}/retry';
      conformance.check(await api.post(`${own}/deliveries/${deliveryId}/retry`), retry); // disabled: 400
      conformance.check(await api.post(`${own}/enable`), op('enable'));
    });

    it('portal links, their exchange, and a portal session refused (403)', async () => {
      const create = 'POST /portal-links';
      const list = 'GET /portal-links';
      const revoke = 'DELETE /portal-links/{portalLinkId}';
      const open = 'POST /portal-sessions';
      const huge = { x: 'x'.repeat(1024 * 1024 + 1) };
      const made = await api.post('/portal-links', { readOnly: true });
      conformance.check(made, create);
      conformance.check(await api.post('/portal-links', { expiresIn: 'soon' }), create);
      conformance.check(await api.post('/portal-links', huge), create);
      conformance.check(await api.get('/portal-links'), list);
      conformance.check(await api.get('/portal-links?cursor=bogus'), list);

      const token = new URL(made.body.data.url as string).hash.slice('#portal='.length);
      const opened = await t.http().post('/api/v1/portal-sessions').send({ token });
      conformance.check(opened, open);
      conformance.check(await t.http().post('/api/v1/portal-sessions').send({ token }), open); // used: 401
      conformance.check(await t.http().post('/api/v1/portal-sessions').send({}), open);
      conformance.check(
        await t
          .http()
          .post('/api/v1/portal-sessions')
          .send({ token, ...huge }),
        open,
      );
      const readOnly = client(t, opened.body.data.token as string, 'x-ac-portal-session');
      const refused = await readOnly.post('/webhooks', { url: receiver.url, calculators: [calculatorId] });
      expect(refused.status).toBe(403);
      conformance.check(refused, 'POST /webhooks');
      conformance.check(await readOnly.get('/portal-links'), list);

      const own = `/portal-links/${made.body.data.id}`;
      conformance.check(await api.delete(own).set('content-type', 'text/plain').send('x'), revoke);
      conformance.check(await api.delete(own), revoke);
      conformance.check(await api.delete('/portal-links/unknownlink'), revoke);
    });

    it('PATCH /webhooks/{webhookId} and GET /webhooks/{webhookId}/settings (DESIGN 10)', async () => {
      const patch = 'PATCH /webhooks/{webhookId}';
      const settings = 'GET /webhooks/{webhookId}/settings';
      const own = `/webhooks/${webhookId}`;
      const changed = {
        headers: { Authorization: 'Bearer 0123456789abcdef' },
        timeoutMs: 2000,
        retrySchedule: 'short',
      };
      conformance.check(await api.request('patch', own).send(changed), patch);
      conformance.check(await api.request('patch', own).send({ maxInFlight: 0 }), patch);
      conformance.check(await api.request('patch', '/webhooks/unknownwebhook').send({ name: 'x' }), patch);
      conformance.check(await api.request('patch', own).send({ name: 'x'.repeat(1024 * 1024 + 1) }), patch);
      conformance.check(await api.get(`${own}/settings`), settings);
      conformance.check(
        await api.get(`${own}/settings`).set('content-type', 'application/json').send('{bad'),
        settings,
      );
      conformance.check(await api.get('/webhooks/unknownwebhook/settings'), settings);
      conformance.check(await api.request('patch', own).send({ headers: null, timeoutMs: null }), patch);
      conformance.check(await api.request('patch', own).send({ filter: '$.finished == true' }), patch);
    });

    it('GET /calculators/{calculatorId}/submissions and GET /submissions/{submissionId} (DESIGN 11)', async () => {
      const list = 'GET /calculators/{calculatorId}/submissions';
      const one = 'GET /submissions/{submissionId}';
      const made = await api.post(`/calculators/${calculatorId}/submissions`, { data: { loanAmount: 5 } });
      const own = `/calculators/${calculatorId}/submissions`;
      conformance.check(await api.get(own), list);
      conformance.check(await api.get(`${own}?limit=1&filter=${encodeURIComponent('$.data.loanAmount > 1')}`), list);
      conformance.check(await api.get(`${own}?filter=${encodeURIComponent('$.data.loanAmount')}`), list);
      conformance.check(await api.get('/calculators/unknowncalculator/submissions'), list);
      conformance.check(await api.get(`/submissions/${made.body.data.id}`), one);
      conformance.check(
        await api.get(`/submissions/${made.body.data.id}`).set('content-type', 'application/json').send('{bad'),
        one,
      );
      conformance.check(await api.get('/submissions/unknownsubmission'), one);
    });

    it('DELETE /webhooks/{webhookId}', async () => {
      const op = 'DELETE /webhooks/{webhookId}';
      conformance.check(await api.delete(`/webhooks/${webhookId}`).set('content-type', 'text/plain').send('x'), op);
      conformance.check(await api.delete(`/webhooks/${webhookId}`), op);
      conformance.check(await api.delete(`/webhooks/${webhookId}`), op);
    });

    it('every operation without a key: 401', async () => {
      const anonymous = client(t, '');
      const paths: Record<string, string> = {
        '{webhookId}': 'unknownwebhook',
        '{calculatorId}': 'unknowncalculator',
        '{deliveryId}': 'unknowndelivery',
        '{recoveryId}': 'unknownrecovery',
        '{portalLinkId}': 'unknownlink',
        '{operationalWebhookId}': 'unknownhook',
        '{submissionId}': 'unknownsubmission',
      };
      for (const operation of operationsOf(doc).filter((o) => !UNSUPPORTED_OPERATIONS.includes(o))) {
        const [method, template] = operation.split(' ');
        const path = template.replace(/\{\w+\}/g, (p) => paths[p]);
        conformance.check(await anonymous.request(method.toLowerCase() as Method, path), operation);
      }
    });

    it('an unexpected error: 500, and an unreachable database: 503', async () => {
      const webhooks = t.app.get(WebhooksService);
      const list = webhooks.list;
      try {
        webhooks.list = async () => {
          throw new Error('boom');
        };
        conformance.check(await api.get('/webhooks'), 'GET /webhooks');
        webhooks.list = async () => {
          throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
        };
        conformance.check(await api.get('/webhooks'), 'GET /webhooks');
      } finally {
        webhooks.list = list;
      }
    });

    it('Idempotency-Key: a replay, a reused key (400) and a repeat of a request still running (409)', async () => {
      const op = 'POST /webhooks';
      const body = { url: receiver.url, calculators: [calculatorId] };
      const first = await api.post('/webhooks', body).set('Idempotency-Key', 'openapi-1');
      conformance.check(first, op);
      const replay = await api.post('/webhooks', body).set('Idempotency-Key', 'openapi-1');
      expect(replay.headers['idempotent-replayed']).toBe('true');
      conformance.check(replay, op);
      const reused = await api.post('/webhooks', { ...body, name: 'other' }).set('Idempotency-Key', 'openapi-1');
      expect(reused.body.error.code).toBe('idempotency_key_reused');
      conformance.check(reused, op);
      // What a request still running (or whose process died) leaves: a claim with no answer yet.
      await t.dataSource.query(
        `INSERT INTO idempotency_keys (workspace_id, key, method, path, body_hash, expires_at)
         VALUES ($1, 'openapi-running', 'POST', '/api/v1/webhooks', $2, now() + interval '1 day')`,
        [workspaceId, bodyHash(body)],
      );
      const stillRunning = await api.post('/webhooks', body).set('Idempotency-Key', 'openapi-running');
      conformance.check(stillRunning, op);
    }, 30_000);

    it('a method a path does not take: the documented 405 body', async () => {
      const res = await api.request('put', '/webhooks/unknownwebhook');
      expect(res.status).toBe(405);
      expect(res.headers.allow).toBe('DELETE, GET, HEAD, PATCH');
      conformance.validate(pointer('components', 'schemas', 'MethodNotAllowedError'), res.body, 'PUT /webhooks/{id}');
    });

    it('PUT on a webhook, with a key or without: the documented 405', async () => {
      const { id: calculatorId } = await createCalculator(t, workspaceId);
      const webhook = await api.post('/webhooks', { url: receiver.url, calculators: [calculatorId] });
      for (const operation of UNSUPPORTED_OPERATIONS) {
        const method = operation.split(' ')[0].toLowerCase() as Method;
        conformance.check(
          await api.request(method, `/webhooks/${webhook.body.data.id}`).send({ name: 'x' }),
          operation,
        );
        conformance.check(await client(t, '').request(method, '/webhooks/unknownwebhook'), operation);
      }
    });
  });

  describe('the contract check every e2e app runs (test/support/openapi-contract.ts)', () => {
    const answer = (
      method: string,
      url: string,
      status: number,
      body: unknown,
      headers: Record<string, string> = {},
    ) => {
      const all: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', ...headers };
      const text = typeof body === 'string' ? body : JSON.stringify(body);
      return new OpenApiContract(doc as unknown as OpenApiDocument).verdict(
        { method, originalUrl: `/api/v1${url}`, body: undefined, query: {} } as AnswerRequest,
        { statusCode: status, getHeader: (name: string) => all[name.toLowerCase()] } as AnswerResponse,
        text,
      );
    };
    const workspace = {
      id: 'ws1',
      name: 'W',
      createdAt: '2024-01-15T10:30:00.000Z',
      updatedAt: '2024-01-15T10:30:00.000Z',
    };
    const notFound = { error: { code: 'not_found', message: 'No such webhook' } };

    it('passes answers as the document describes them', () => {
      expect(answer('GET', '/me', 200, workspace)).toBeUndefined();
      expect(answer('GET', '/webhooks/abc', 404, notFound)).toBeUndefined();
      expect(answer('GET', '/no/such/path', 404, notFound)).toBeUndefined();
      const notAllowed = { error: { code: 'method_not_allowed', message: 'PUT is not allowed on this path' } };
      expect(answer('PUT', '/webhooks/abc', 405, notAllowed, { allow: 'DELETE, GET, HEAD' })).toBeUndefined();
      expect(answer('POST', '/me', 405, notAllowed, { allow: 'GET, HEAD' })).toBeUndefined();
    });

    it('catches a body that does not match, an undocumented status or content type, a wrong Allow', () => {
      expect(answer('GET', '/me', 200, { ...workspace, id: undefined })).toMatch(/must have required property 'id'/);
      expect(answer('GET', '/me', 200, { ...workspace, extra: 1 })).toMatch(/must NOT have additional properties/);
      expect(answer('GET', '/me', 404, notFound)).toMatch(/answered 404, which the document does not list/);
      expect(answer('GET', '/me', 200, 'hello', { 'content-type': 'text/plain' })).toMatch(/is text\/plain/);
      const notAllowed = { error: { code: 'method_not_allowed', message: 'no' } };
      expect(answer('POST', '/me', 405, notAllowed, { allow: 'GET' })).toMatch(/Allow "GET"/);
      expect(answer('POST', '/me', 400, notFound)).toMatch(/not in the document, yet answered 400/);
      expect(answer('GET', '/no/such/path', 200, {})).toMatch(/answered 200 on a path the document does not have/);
    });
  });

  describe('rate limited (RATE_LIMIT_PER_MINUTE=1)', () => {
    let limited: TestApp;
    beforeAll(async () => {
      limited = await createTestApp({ RATE_LIMIT_PER_MINUTE: '1' });
    });
    afterAll(() => limited.close());

    it('answers 429 with the documented body and Retry-After', async () => {
      const other = client(limited, (await createWorkspace(limited)).key);
      conformance.check(await other.get('/me'), 'GET /me');
      conformance.check(await other.get('/me'), 'GET /me');
    });
  });

  it('exercised every documented response (those of every operation, once each for 429, 500, 503)', () => {
    const expected = conformance
      .documented()
      .filter((r) => !SAMPLED_STATUSES.includes(r.split(' ')[2]))
      .concat(['GET /me 429', 'GET /webhooks 500', 'GET /webhooks 503', 'POST /webhooks 409', 'POST /webhooks 403'])
      .concat(['GET /portal-links 403']);
    expect([...conformance.seen].sort()).toEqual(expected.sort());
  });
});
