import fc from 'fast-check';
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestApp } from './test-app.js';

/** Every table, and a digest of its rows (api_keys without last_used_at, which a lookup may touch). */
const SNAPSHOT_SOURCES: Record<string, string> = {
  workspaces: 'workspaces',
  api_keys: '(SELECT id, workspace_id, prefix, key_hash, created_at, revoked_at FROM api_keys)',
  calculators: 'calculators',
  webhooks: 'webhooks',
  webhook_calculators: 'webhook_calculators',
  webhook_triggers: 'webhook_triggers',
  submissions: 'submissions',
  deliveries: 'deliveries',
  delivery_attempts: 'delivery_attempts',
  recoveries: 'recoveries',
};
const SNAPSHOT_SQL = `SELECT json_build_object(${Object.entries(SNAPSHOT_SOURCES)
  .map(
    ([name, source]) =>
      `'${name}', (SELECT count(*) || ':' || coalesce(md5(string_agg(x::text, '|' ORDER BY x::text)), '') FROM ${source} x)`,
  )
  .join(', ')}) AS snapshot`;

export type DatabaseSnapshot = Record<string, string>;

/** Row counts and a checksum of every table: a rejected request must leave all of it as it was. */
export async function snapshotDatabase(t: TestApp): Promise<DatabaseSnapshot> {
  const [row] = await t.dataSource.query(SNAPSHOT_SQL);
  return row.snapshot as DatabaseSnapshot;
}

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

export interface RawRequest {
  method: string;
  /** Sent as it is: no normalisation, no encoding. */
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

/** Starts the app's HTTP server on an ephemeral port (supertest would normalise paths and headers). */
export async function listen(t: TestApp): Promise<number> {
  await t.app.listen(0, '127.0.0.1');
  return (t.app.getHttpServer().address() as AddressInfo).port;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

export function rawRequest(port: number, req: RawRequest): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...req.headers };
    if (req.body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'transfer-encoding')) {
      headers['content-length'] = Buffer.byteLength(req.body);
    }
    const outgoing = http.request({ host: '127.0.0.1', port, method: req.method, path: req.path, headers, agent });
    outgoing.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', reject);
    });
    outgoing.on('error', reject);
    outgoing.end(req.body);
  });
}

export function closeAgent(): void {
  agent.destroy();
}

const CODES: Record<number, string | string[]> = {
  400: ['bad_request', 'idempotency_key_reused'],
  401: 'not_authenticated',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'idempotency_key_in_progress',
  413: 'payload_too_large',
  429: 'rate_limited',
};

/**
 * DESIGN 3: never a 5xx; every 4xx is `{"error":{"code","message"[,"details"]}}` with the code of
 * its status, except a 400 on GET /webhooks, which is empty text/plain. Returns a reason, or null.
 */
export function contractViolation(req: RawRequest, res: RawResponse): string | null {
  if (res.status >= 500) return `status ${res.status}: ${res.text.slice(0, 300)}`;
  if (res.status < 400 || req.method === 'HEAD') return null;
  const path = req.path.split('?')[0];
  if (res.status === 400 && req.method === 'GET' && /^\/api\/v1\/webhooks\/?$/i.test(path)) {
    return /^text\/plain/.test(res.headers['content-type'] ?? '') && res.text === ''
      ? null
      : 'GET /webhooks 400 is not empty text/plain';
  }
  if (!/^application\/json/.test(res.headers['content-type'] ?? '')) {
    return `${res.status} with content type ${res.headers['content-type']}`;
  }
  let body: { error?: Record<string, unknown> };
  try {
    body = JSON.parse(res.text);
  } catch {
    return `${res.status} body is not JSON: ${res.text.slice(0, 200)}`;
  }
  const error = body.error;
  if (Object.keys(body).join() !== 'error' || typeof error !== 'object' || error === null) {
    return `${res.status} body is not {error}: ${res.text.slice(0, 200)}`;
  }
  if (![CODES[res.status]].flat().includes(String(error.code))) return `${res.status} with code ${String(error.code)}`;
  if (typeof error.message !== 'string' || error.message === '') return `${res.status} without a message`;
  const extra = Object.keys(error).filter((k) => !['code', 'message', 'details'].includes(k));
  if (extra.length > 0) return `${res.status} error has extra members ${extra.join()}`;
  if (error.details !== undefined) {
    const ok =
      Array.isArray(error.details) &&
      error.details.every(
        (d: { field?: unknown; message?: unknown }) =>
          Object.keys(d).sort().join() === 'field,message' &&
          typeof d.field === 'string' &&
          typeof d.message === 'string',
      );
    if (!ok) return `${res.status} details malformed: ${JSON.stringify(error.details).slice(0, 200)}`;
  }
  if (res.status === 405 && !res.headers.allow) return '405 without an Allow header';
  if (res.status === 429 && !/^\d+$/.test(String(res.headers['retry-after']))) return '429 without Retry-After';
  return null;
}

const BUILTIN_PROTOTYPES = [Object.prototype, Array.prototype, Function.prototype, String.prototype];
const ownNames = () => BUILTIN_PROTOTYPES.map((p) => Object.getOwnPropertyNames(p).sort().join());
const PROTOTYPE_NAMES = ownNames();

/** Nothing was added to the built-in prototypes (a `__proto__` key that reached an assignment would). */
export function expectPrototypesUntouched(): void {
  expect(ownNames()).toEqual(PROTOTYPE_NAMES);
  const probe = {} as Record<string, unknown>;
  for (const key of ['polluted', 'isAdmin', 'url', 'calculators', 'data', 'status']) expect(probe[key]).toBeUndefined();
}

/** Fragments hostile strings are built from: NUL, lone surrogates, bidi marks, BOM, escapes, traversal. */
const ODD_PIECES = [
  '\u0000',
  '\u0001',
  '\u001f',
  '\u007f',
  '\ud800',
  '\udfff',
  '\udbff\udfff',
  '\u202e',
  '\u200f',
  '\u200b',
  '\u2028',
  '\ufeff',
  '\uffff',
  '\u0301',
  '😀',
  'İ',
  'ß',
  '\\',
  '"',
  "'",
  '%',
  '%00',
  '%2F',
  '%zz',
  '../',
  '\r\n',
  '\t',
  ' ',
  '<script>',
  '${x}',
  "' OR 1=1 --",
  '__proto__',
  'constructor',
];

export const oddString = (maxPieces = 12): fc.Arbitrary<string> =>
  fc
    .array(
      fc.oneof(
        fc.constantFrom(...ODD_PIECES),
        fc.string({ unit: 'binary', maxLength: 6 }),
        fc.string({ unit: 'grapheme', maxLength: 6 }),
      ),
      { maxLength: maxPieces },
    )
    .map((pieces) => pieces.join(''));

export const POLLUTION_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty'];

/** Numbers at and past the int32 and safe-integer edges, and the IEEE oddities JSON can carry. */
export const EDGE_NUMBERS = [
  0,
  -0,
  1,
  -1,
  0.5,
  2 ** 31 - 1,
  2 ** 31,
  -(2 ** 31),
  -(2 ** 31) - 1,
  2 ** 32,
  2 ** 53,
  Number.MAX_SAFE_INTEGER + 2,
  -Number.MAX_SAFE_INTEGER - 2,
  Number.MAX_VALUE,
  Number.MIN_VALUE,
  1e-320,
];

/** Number-like text for query strings and raw JSON: edges, exponents, signs, hex, other digit scripts. */
export const NUMBER_TEXTS = [
  '0',
  '-0',
  '1',
  '-1',
  '2147483647',
  '2147483648',
  '-2147483648',
  '-2147483649',
  '4294967296',
  '9007199254740993',
  '1.5',
  '1.0',
  '1e2',
  '1E2',
  '1e999',
  '-1e999',
  '0x10',
  '0b1',
  '+1',
  ' 1',
  '1 ',
  'NaN',
  'Infinity',
  '',
  '00001',
  '１',
  '٣',
  '9'.repeat(400),
];

export function jsonValue(keys: string[] = []): fc.Arbitrary<unknown> {
  const key = fc.oneof(fc.constantFrom(...POLLUTION_KEYS, ...keys), oddString(4));
  return fc.letrec<{ value: unknown; leaf: unknown; array: unknown[]; object: Record<string, unknown> }>((tie) => ({
    value: fc.oneof({ depthSize: 'small', maxDepth: 4 }, tie('leaf'), tie('array'), tie('object')),
    leaf: fc.oneof(fc.constant(null), fc.boolean(), fc.constantFrom(...EDGE_NUMBERS), fc.double(), oddString()),
    array: fc.array(tie('value'), { maxLength: 5 }),
    object: fc.dictionary(key, tie('value'), { maxKeys: 6 }),
  })).value;
}

/**
 * JSON text, including what JSON.stringify never writes: own `__proto__` members, duplicate keys,
 * numbers past double range, a BOM, deep nesting.
 */
export function jsonText(keys: string[] = []): fc.Arbitrary<string> {
  return fc.oneof(
    jsonValue(keys).map((v) => JSON.stringify(v) ?? 'null'),
    fc
      .tuple(fc.constantFrom(...POLLUTION_KEYS, ...keys), jsonValue(keys))
      .map(([k, v]) => `{${JSON.stringify(k)}:${JSON.stringify(v) ?? 'null'}}`),
    fc.constantFrom(...NUMBER_TEXTS.filter((n) => /^-?\d/.test(n))).map((n) => `{"${keys[0] ?? 'a'}":${n}}`),
    fc.constant('\ufeff{}'),
    fc.integer({ min: 100, max: 2000 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`),
    fc.integer({ min: 100, max: 2000 }).map((n) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`),
  );
}

/** Content types a client might send: JSON with parameters and odd casing, near misses, garbage. */
export const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json;charset=UTF-8',
  'application/json; charset="utf-8"',
  'APPLICATION/JSON',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/json; charset=nonsense',
  'application/json; boundary=x',
  'application/json; charset',
  'application/json;;',
  'application/vnd.api+json',
  'application/json-patch+json',
  'application/jsonx',
  'text/json',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=----x',
  'application/',
  '*/*',
  ';',
  '',
  'application/json, text/plain',
];
