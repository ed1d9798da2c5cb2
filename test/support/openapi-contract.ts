import type { ValidateFunction } from 'ajv';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { INestApplication } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import request from 'supertest';

/**
 * The contract check every e2e app runs (test/support/test-app.ts): each answer of the JSON API under
 * /api/v1 is checked against the OpenAPI document that app serves. Out of scope: everything outside
 * /api/v1 (/healthz, /readyz, /console, /admin, /metrics on its own port), the document and the docs
 * page themselves, and what Node's HTTP parser answers before Express sees a request (400, 408, 431).
 *
 * A documented operation must answer a documented status, with a documented content type and a body
 * matching its schema; a request it answered 2xx must match the operation's body and query schemas (the
 * service accepted it, so the document must too). A path of the document called with a method it does
 * not document must answer the 405 the document describes, with an Allow header naming exactly the
 * methods documented with a success; any other path under /api/v1 must answer 404 `NotFoundError` (400
 * `BadRequestError` when it is not valid percent-encoded UTF-8). A HEAD answer is checked without a body.
 */

type Schema = Record<string, unknown>;
interface MediaType {
  schema?: Schema;
}
interface ResponseObject {
  content?: Record<string, MediaType>;
}
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: Schema;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, MediaType> };
  responses: Record<string, ResponseObject>;
}
export interface OpenApiDocument {
  servers: { url: string }[];
  paths: Record<string, Record<string, Operation>>;
}

/** What the check reads of a request and its answer (Express's objects, or a test's stand-ins). */
export type AnswerRequest = Pick<Request, 'method' | 'originalUrl' | 'body' | 'query'>;
export type AnswerResponse = Pick<Response, 'statusCode' | 'getHeader'>;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
/** Served under the API prefix, but pages and the document itself rather than operations. */
const NOT_OPERATIONS = /^\/(openapi\.json|docs)(\/|$)/i;

const pointer = (...segments: string[]) =>
  segments.map((s) => encodeURIComponent(s.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/');

const decodes = (path: string): boolean => {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
};

interface Template {
  path: string;
  pattern: RegExp;
  /** Literal segments, so `/webhooks/x/secret` prefers a literal template over a parameter one. */
  literals: number;
}

export class OpenApiContract {
  private readonly ajv = new Ajv2020.default({ strict: false, allErrors: true });
  // Query values without their width: the service clamps a `limit` past int32 to 100 (DESIGN 3) while the
  // document keeps the spec's int32; type, minimum and enum still hold.
  private readonly queryAjv = new Ajv2020.default({ strict: false, allErrors: true, validateFormats: false });
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly templates: Template[];
  private readonly prefix: string;
  readonly violations: string[] = [];

  constructor(private readonly doc: OpenApiDocument) {
    addFormats.default(this.ajv);
    // Formats OpenAPI defines that JSON Schema does not; the API's integers are what int32/int64 say.
    this.ajv.addFormat('int32', {
      type: 'number',
      validate: (n: number) => Number.isInteger(n) && Math.abs(n) < 2 ** 31,
    });
    this.ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
    this.ajv.addSchema({ ...doc, $id: 'openapi.json' });
    this.queryAjv.addSchema({ ...doc, $id: 'openapi.json' });
    this.prefix = doc.servers[0]?.url ?? '';
    this.templates = Object.keys(doc.paths).map((path) => ({
      path,
      // Express matches routes case-insensitively, with or without a trailing slash.
      pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}/?$`, 'i'),
      literals: path.split('/').filter((s) => s && !s.startsWith('{')).length,
    }));
    this.templates.sort((a, b) => b.literals - a.literals);
  }

  /** Express middleware: records the answer of each request in scope once it has been sent. */
  readonly middleware = (req: Request, res: Response, next: NextFunction): void => {
    const url = req.originalUrl;
    const path = url.split('?')[0];
    if (!path.toLowerCase().startsWith(`${this.prefix.toLowerCase()}/`) && path.toLowerCase() !== this.prefix) {
      return next();
    }
    const relative = path.slice(this.prefix.length) || '/';
    if (NOT_OPERATIONS.test(relative)) return next();
    const chunks: Buffer[] = [];
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const end = res.end.bind(res) as (...args: unknown[]) => Response;
    const keep = (chunk: unknown, encoding: unknown) => {
      if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
      chunks.push(
        Buffer.isBuffer(chunk)
          ? chunk
          : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'),
      );
    };
    res.write = ((chunk: unknown, encoding?: unknown, callback?: unknown) => {
      keep(chunk, encoding);
      return write(chunk, encoding, callback);
    }) as Response['write'];
    res.end = ((chunk?: unknown, encoding?: unknown, callback?: unknown) => {
      keep(chunk, encoding);
      return end(chunk, encoding, callback);
    }) as Response['end'];
    const testName = expect.getState().currentTestName ?? '(outside a test)';
    res.once('finish', () => {
      const violation = this.verdict(req, res, Buffer.concat(chunks).toString('utf8'));
      if (violation) this.violations.push(`[${testName}] ${req.method} ${url}: ${violation}`);
    });
    next();
  };

  /** What is wrong with one answer of the API (a request under the prefix), or undefined when nothing is. */
  verdict(req: AnswerRequest, res: AnswerResponse, text: string): string | undefined {
    const relative = req.originalUrl.split('?')[0].slice(this.prefix.length) || '/';
    try {
      this.check(req, res, relative, text);
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  }

  private check(req: AnswerRequest, res: AnswerResponse, relative: string, text: string): void {
    const template = this.templates.find((t) => t.pattern.test(relative));
    const status = String(res.statusCode);
    // A HEAD answer has the status and headers of the GET, and no body to check.
    const body = req.method === 'HEAD' ? undefined : text;
    if (!template) {
      // A path that is not valid percent-encoded UTF-8 cannot name anything: a bad request (DESIGN 3).
      const [expected, schema] = decodes(relative) ? ['404', 'NotFoundError'] : ['400', 'BadRequestError'];
      if (status !== expected) return this.fail(`answered ${status} on a path the document does not have`);
      return this.validateBody(pointer('components', 'schemas', schema), res, body, `unknown path ${status}`);
    }
    const item = this.doc.paths[template.path];
    const method = req.method.toLowerCase();
    const head = method === 'head';
    const operation = item[method] ?? (head ? item.get : undefined);
    const name = `${req.method} ${template.path}`;
    if (!operation) return this.checkNotAllowed(req, res, template.path, body);
    const documented =
      operation.responses[status] ?? operation.responses[`${status[0]}XX`] ?? operation.responses.default;
    if (!documented) return this.fail(`${name} answered ${status}, which the document does not list: ${text}`);
    if (head) return;
    const mediaType = String(res.getHeader('content-type') ?? '')
      .split(';')[0]
      .trim();
    const content = documented.content ?? {};
    if (Object.keys(content).length === 0) {
      if (text !== '') this.fail(`${name} ${status} has a body, the document none: ${text}`);
      return;
    }
    if (!(mediaType in content)) {
      return this.fail(`${name} ${status} is ${mediaType || 'without a content type'}, not ${Object.keys(content)}`);
    }
    const schemaAt = pointer(
      'paths',
      template.path,
      item[method] ? method : 'get',
      'responses',
      status,
      'content',
      mediaType,
      'schema',
    );
    if (content[mediaType].schema) this.validateBody(schemaAt, res, text, `${name} ${status}`);
    if (status.startsWith('2')) this.checkRequest(req, template.path, method, operation);
  }

  /** A request the service accepted must be one the document accepts. */
  private checkRequest(req: AnswerRequest, path: string, method: string, operation: Operation): void {
    const name = `${req.method} ${path}`;
    const json = operation.requestBody?.content['application/json'];
    if (json?.schema && req.body !== undefined) {
      this.validate(
        pointer('paths', path, method, 'requestBody', 'content', 'application/json', 'schema'),
        req.body,
        `${name} request body`,
      );
    }
    (operation.parameters ?? []).forEach((parameter, index) => {
      if (parameter.in !== 'query' || !parameter.schema) return;
      const raw = req.query[parameter.name];
      if (raw === undefined) {
        if (parameter.required) this.fail(`${name} answered 2xx without the required query ${parameter.name}`);
        return;
      }
      const type = parameter.schema.type;
      // Query values are text: a number-typed parameter is checked as the number the text spells.
      const value =
        (type === 'integer' || type === 'number') && typeof raw === 'string' && /^-?\d+(\.\d+)?$/.test(raw)
          ? Number(raw)
          : raw;
      this.validate(
        pointer('paths', path, method, 'parameters', String(index), 'schema'),
        value,
        `${name} query ${parameter.name}`,
        this.queryAjv,
      );
    });
  }

  private checkNotAllowed(req: AnswerRequest, res: AnswerResponse, path: string, text: string | undefined): void {
    const name = `${req.method} ${path}`;
    if (res.statusCode !== 405)
      return this.fail(`${name} is not in the document, yet answered ${res.statusCode}: ${text}`);
    const item = this.doc.paths[path];
    const succeeding = Object.keys(item)
      .filter((m) => METHODS.includes(m) && Object.keys(item[m].responses).some((s) => s.startsWith('2')))
      .map((m) => m.toUpperCase());
    if (succeeding.includes('GET')) succeeding.push('HEAD');
    const allow = String(res.getHeader('allow') ?? '');
    const expected = succeeding.sort().join(', ');
    if (allow !== expected) this.fail(`${name} 405 has Allow "${allow}", the document's methods are "${expected}"`);
    this.validateBody(pointer('components', 'schemas', 'MethodNotAllowedError'), res, text, `${name} 405`);
  }

  private validateBody(schemaAt: string, res: AnswerResponse, text: string | undefined, what: string): void {
    if (text === undefined) return;
    const mediaType = String(res.getHeader('content-type') ?? '')
      .split(';')[0]
      .trim();
    if (mediaType === 'application/json') {
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return this.fail(`${what}: the body is not JSON: ${text.slice(0, 200)}`);
      }
      return this.validate(schemaAt, body, what);
    }
    if (schemaAt.startsWith('components')) return this.fail(`${what} is ${mediaType}, not application/json`);
    this.validate(schemaAt, text, what);
  }

  private validate(schemaAt: string, value: unknown, what: string, ajv = this.ajv): void {
    const key = `${ajv === this.ajv ? '' : 'query:'}${schemaAt}`;
    let validate = this.validators.get(key);
    if (!validate) {
      validate = ajv.compile({ $ref: `openapi.json#/${schemaAt}` });
      this.validators.set(key, validate);
    }
    if (!validate(value)) {
      this.fail(
        `${what} does not match the document: ${ajv.errorsText(validate.errors)}: ${JSON.stringify(value).slice(0, 300)}`,
      );
    }
  }

  /** The first violation of an answer ends its check. */
  private fail(message: string): never {
    throw new Error(message);
  }
}

const watched: OpenApiContract[] = [];

/**
 * Checks every answer of `app` against the document it serves: call before `app.init()` (the check runs
 * ahead of the routes), then `load()` once it is up. The test file fails, at its end, listing each violation.
 */
export function watchContract(app: INestApplication): { load: () => Promise<void> } {
  let contract: OpenApiContract | undefined;
  app.use((req: Request, res: Response, next: NextFunction) =>
    contract ? contract.middleware(req, res, next) : next(),
  );
  return {
    load: async () => {
      const res = await request(app.getHttpServer()).get('/api/v1/openapi.json');
      if (res.status !== 200) throw new Error(`The app serves no OpenAPI document (${res.status})`);
      contract = new OpenApiContract(res.body as OpenApiDocument);
      watched.push(contract);
    },
  };
}

// Runs after the file's own hooks have closed its apps: every answer has been checked by then.
afterAll(() => {
  const violations = watched.splice(0).flatMap((c) => c.violations);
  if (violations.length > 0) {
    const shown = violations.slice(0, 40).map((v) => (v.length > 600 ? `${v.slice(0, 600)}...` : v));
    const more = violations.length > shown.length ? `\n  ... and ${violations.length - shown.length} more` : '';
    throw new Error(`${violations.length} answers contradict the OpenAPI document:\n  ${shown.join('\n  ')}${more}`);
  }
});
