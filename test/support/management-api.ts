import type { Response } from 'supertest';
import { API_KEY_HEADER } from '../../src/auth/api-key.js';
import { isCuid2 } from '../../src/core/ids.js';
import type { WebhookListItem, WebhookResponse } from '../../src/webhooks/webhook.serializer.js';
import { ISO_MS, type TestApp } from './test-app.js';

export const API = '/api/v1';

/** Spec 2.1, 2.3, 2.4 and 2.5: the exact key sets, sorted. */
export const WEBHOOK_KEYS = ['createdAt', 'id', 'name', 'source', 'updatedAt', 'url', 'workspaceId'];
export const WEBHOOK_LIST_ITEM_KEYS = [...WEBHOOK_KEYS, 'calculators', 'triggers'].sort();
export const WORKSPACE_KEYS = ['createdAt', 'id', 'name', 'updatedAt'];
export const CALCULATOR_KEYS = [
  'id',
  'createdAt',
  'updatedAt',
  'name',
  'slug',
  'workspaceId',
  'folderId',
  'status',
  'elements',
  'layouts',
  'variables',
  'submitActions',
  'themeId',
  'templateVisibility',
  'templateCalculatorId',
  'clonesCount',
  'impressionsCount',
  'lastImpressionAt',
  'submissionsCount',
  'lastSubmissionAt',
  'newElementCount',
].sort();

export const keysOf = (value: object): string[] => Object.keys(value).sort();

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** Requests to the API with one workspace's key (or, in `header`, another credential: a portal session). */
export function client(t: TestApp, key: string, header = API_KEY_HEADER) {
  const request = (method: Method, path: string) =>
    t
      .http()
      [method](API + path)
      .set(header, key);
  return {
    request,
    get: (path: string) => request('get', path),
    post: (path: string, body?: string | object) => {
      const req = request('post', path);
      return body === undefined ? req : req.send(body);
    },
    patch: (path: string, body: string | object) => request('patch', path).send(body),
    delete: (path: string) => request('delete', path),
  };
}
export type Client = ReturnType<typeof client>;

/** Status and JSON content type; the body is part of the comparison so a failure shows it. */
export function expectJson(res: Response, status: number): void {
  expect({ status: res.status, body: res.body }).toMatchObject({ status });
  expect(res.headers['content-type']).toMatch(/^application\/json/);
}

/** `{ error: { code, message, details? } }` and nothing else; returns `error`. */
export function expectError(res: Response, status: number, code: string) {
  expectJson(res, status);
  expect(keysOf(res.body)).toEqual(['error']);
  const error = res.body.error as { code: string; message: string; details?: { field: string; message: string }[] };
  expect(error.code).toBe(code);
  expect(typeof error.message).toBe('string');
  expect(error.message.length).toBeGreaterThan(0);
  return error;
}

/** A 400 body; with `field`, its details name that field. */
export function expectBadRequest(res: Response, field?: string) {
  const error = expectError(res, 400, 'bad_request');
  expect(keysOf(error).filter((k) => k !== 'details')).toEqual(['code', 'message']);
  if (field === undefined) return error;
  expect(Array.isArray(error.details)).toBe(true);
  for (const detail of error.details!) {
    expect(detail).toEqual({ field: expect.any(String), message: expect.any(String) });
  }
  expect(error.details!.map((d) => d.field)).toContain(field);
  return error;
}

export function expectNotFound(res: Response) {
  const error = expectError(res, 404, 'not_found');
  expect(keysOf(error)).toEqual(['code', 'message']);
}

/** GET, DELETE and GET /secret of the webhook all answer 404: it does not exist for this key. */
export async function expectNoWebhook(api: Client, id: string): Promise<void> {
  expectNotFound(await api.get(`/webhooks/${id}`));
  expectNotFound(await api.delete(`/webhooks/${id}`));
  expectNotFound(await api.get(`/webhooks/${id}/secret`));
}

export function expectNotAuthenticated(res: Response) {
  const error = expectError(res, 401, 'not_authenticated');
  expect(keysOf(error)).toEqual(['code', 'message']);
}

export function expectMethodNotAllowed(res: Response, allow: string) {
  const error = expectError(res, 405, 'method_not_allowed');
  expect(keysOf(error)).toEqual(['code', 'message']);
  expect(res.headers.allow).toBe(allow);
}

export function expectTimestamp(value: unknown): void {
  expect(value).toMatch(ISO_MS);
  expect(new Date(value as string).toISOString()).toBe(value);
}

/** Exactly the seven fields of spec 2.1, well formed. */
export function expectWebhookShape(webhook: WebhookResponse, workspaceId: string): void {
  expect(keysOf(webhook)).toEqual(WEBHOOK_KEYS);
  expect(isCuid2(webhook.id)).toBe(true);
  expect(webhook.workspaceId).toBe(workspaceId);
  expect(typeof webhook.name).toBe('string');
  expect(typeof webhook.url).toBe('string');
  expect(typeof webhook.source).toBe('string');
  expectTimestamp(webhook.createdAt);
  expectTimestamp(webhook.updatedAt);
}

export async function registerWebhook(api: Client, body: object): Promise<WebhookResponse> {
  const res = await api.post('/webhooks', body);
  expectJson(res, 200);
  expect(keysOf(res.body)).toEqual(['data']);
  return res.body.data as WebhookResponse;
}

export async function listWebhooks(api: Client): Promise<WebhookListItem[]> {
  const res = await api.get('/webhooks');
  expectJson(res, 200);
  expect(keysOf(res.body)).toEqual(['data']);
  return res.body.data as WebhookListItem[];
}

export async function getWebhook(api: Client, id: string): Promise<WebhookResponse> {
  const res = await api.get(`/webhooks/${id}`);
  expectJson(res, 200);
  expect(keysOf(res.body)).toEqual(['data']);
  return res.body.data as WebhookResponse;
}

export async function removeWebhook(api: Client, id: string): Promise<WebhookResponse> {
  const res = await api.delete(`/webhooks/${id}`);
  expectJson(res, 200);
  expect(keysOf(res.body)).toEqual(['data']);
  return res.body.data as WebhookResponse;
}

export async function signingSecret(api: Client, id: string): Promise<string> {
  const res = await api.get(`/webhooks/${id}/secret`);
  expectJson(res, 200);
  expect(keysOf(res.body)).toEqual(['data']);
  expect(keysOf(res.body.data)).toEqual(['key', 'previousKeyExpiresAt']);
  expect(typeof res.body.data.key).toBe('string');
  return res.body.data.key as string;
}

/** Every webhook row of the workspace, removed ones included: a rejected request must add none. */
export async function webhookRowCount(t: TestApp, workspaceId: string): Promise<number> {
  const [row] = await t.dataSource.query('SELECT count(*)::int AS n FROM webhooks WHERE workspace_id = $1', [
    workspaceId,
  ]);
  return row.n as number;
}
