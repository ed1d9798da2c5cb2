// The public API (DESIGN 3, 4 and 7) as the console calls it: same origin, key in x-ac-api-key only (or,
// opened by a portal link, its session in x-ac-portal-session: DESIGN 10).
import { portalSession, type PortalSession } from './portal-session.js';
import { tabStorage } from './tab-storage.js';

const KEY_STORAGE = 'ac-console-api-key';

export interface ApiErrorBody {
  code: string;
  message: string;
  details?: { field: string; message: string }[];
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: ApiErrorBody,
  ) {
    super(body.details?.length ? `${body.message} (${body.details.map((d) => d.message).join('; ')})` : body.message);
  }
}

export interface Calculator {
  id: string;
  name: string;
}

export interface Webhook {
  id: string;
  name: string;
  url: string;
  createdAt: string;
  calculators: Calculator[];
}

export interface WebhookHealth {
  webhookId: string;
  state: 'active' | 'disabled';
  disabledAt: string | null;
  disabledReason: 'manual' | 'gone' | 'failing' | null;
  consecutiveFailures: number;
  lastAttemptAt: string | null;
  lastSuccessAt: string | null;
  lastError: string | null;
  pendingDeliveries: number;
}

export const OPERATIONAL_EVENTS = ['webhook.disabled', 'webhook.enabled', 'delivery.failed', 'recovery.completed'];

export interface OperationalWebhook {
  id: string;
  url: string;
  events: string[];
  createdAt: string;
  lastAttemptAt: string | null;
  lastSuccessAt: string | null;
  lastError: string | null;
}

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'cancelled', 'skipped'] as const;

export interface Delivery {
  id: string;
  webhookId: string;
  submissionId: string | null;
  /** newSubmission, or the operational event an operational webhook was sent. */
  event: string;
  status: (typeof DELIVERY_STATUSES)[number];
  attemptCount: number;
  maxAttempts: number;
  nextAttemptAt: string | null;
  lastAttemptAt: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: string;
  completedAt: string | null;
}

export interface Attempt {
  attemptNumber: number;
  trigger: string;
  startedAt: string;
  durationMs: number;
  statusCode: number | null;
  succeeded: boolean;
  responseBody: string | null;
  error: string | null;
}

export interface DeliveryDetail extends Delivery {
  payload: unknown;
  attempts: Attempt[];
}

export interface Recovery {
  id: string;
  webhookId: string;
  since: string;
  until: string;
  status: 'running' | 'completed' | 'cancelled';
  matched: number;
  requeued: number;
  createdAt: string;
  completedAt: string | null;
}

export interface AuditEvent {
  id: string;
  action: string;
  occurredAt: string;
  actor: { type: string; id: string };
  requestId: string | null;
  target: { type: string; id: string };
  changes: Record<string, unknown>;
}

export const RETRY_SCHEDULES = ['standard', 'short', 'none'] as const;

/** A webhook's settings (DESIGN 10) as they apply now; header values come masked. */
export interface WebhookSettings {
  id: string;
  name: string;
  headers: Record<string, string>;
  timeoutMs: number;
  maxInFlight: number | null;
  retrySchedule: (typeof RETRY_SCHEDULES)[number];
  filter: string | null;
  filterCounts: { since: string; passed: number; heldBack: number } | null;
  defaults: { timeoutMs: boolean; maxInFlight: boolean };
}

/** A submission, as a `newSubmission` delivery carries it (DESIGN 11). */
export interface Submission {
  id: string;
  createdAt: string;
  updatedAt: string;
  calculatorId: string;
  finished: boolean;
  data: Record<string, unknown>;
  meta: Record<string, unknown>;
}

/** A PATCH: the fields to change; null resets one to its default (in `headers`, removes that header). */
export type SettingsChange = Partial<{
  name: string;
  headers: Record<string, string | null>;
  timeoutMs: number | null;
  maxInFlight: number | null;
  retrySchedule: WebhookSettings['retrySchedule'];
  filter: string | null;
}>;

export interface RotatedSecret {
  key: string;
  previousKeyExpiresAt: string | null;
}

/** The key lives in this tab only (tabStorage): gone when the tab closes or on sign out. */
export const session = {
  key: (): string | null => tabStorage.get(KEY_STORAGE),
  signIn: (key: string) => tabStorage.set(KEY_STORAGE, key),
  signOut: () => tabStorage.remove(KEY_STORAGE),
};

let onUnauthenticated: () => void = () => undefined;

/** Called when a request answers 401: the key was revoked while the tab was open. */
export const whenUnauthenticated = (handler: () => void) => {
  onUnauthenticated = handler;
};

const credential = (key: string | null): Record<string, string> => {
  const portal = key === null ? portalSession.get() : null;
  return portal ? { 'x-ac-portal-session': portal.token } : { 'x-ac-api-key': key ?? '' };
};

async function call<T>(method: string, path: string, body?: unknown, key = session.key()): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json', ...credential(key) };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`/api/v1${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: 'no-store',
    credentials: 'omit',
    referrerPolicy: 'no-referrer',
  });
  const text = await res.text();
  const json = text ? (JSON.parse(text) as { data?: T; error?: ApiErrorBody }) : {};
  if (!res.ok) {
    if (res.status === 401 && key === session.key()) onUnauthenticated();
    throw new ApiError(res.status, json.error ?? { code: `http_${res.status}`, message: `HTTP ${res.status}` });
  }
  return json as T;
}

const data = async <T>(method: string, path: string, body?: unknown): Promise<T> =>
  (await call<{ data: T }>(method, path, body)).data;

const query = (params: Record<string, string | number | undefined>) => {
  const q = new URLSearchParams();
  for (const [name, value] of Object.entries(params))
    if (value !== undefined && value !== '') q.set(name, String(value));
  const s = q.toString();
  return s ? `?${s}` : '';
};

const id = encodeURIComponent;

export const api = {
  /** Checks a key before it is kept: GET /me answers 401 for a wrong one. */
  checkKey: (key: string) => call<{ data: { id: string; name: string } }>('GET', '/me', undefined, key),
  me: () => data<{ id: string; name: string }>('GET', '/me'),
  // No credential but the token: a 401 here is the link's, not the tab's session's.
  openPortalSession: async (token: string) =>
    (await call<{ data: PortalSession }>('POST', '/portal-sessions', { token }, '')).data,
  calculators: (offset: number) => data<Calculator[]>('GET', `/calculators${query({ limit: 100, offset })}`),
  webhooks: () => data<Webhook[]>('GET', '/webhooks'),
  register: (body: { url: string; name: string; calculators: string[] }) => data<Webhook>('POST', '/webhooks', body),
  remove: (webhookId: string) => data<Webhook>('DELETE', `/webhooks/${id(webhookId)}`),
  health: (webhookId: string) => data<WebhookHealth>('GET', `/webhooks/${id(webhookId)}/health`),
  disable: (webhookId: string) => data<WebhookHealth>('POST', `/webhooks/${id(webhookId)}/disable`),
  enable: (webhookId: string) => data<WebhookHealth>('POST', `/webhooks/${id(webhookId)}/enable`),
  sendTest: (webhookId: string) => data<Delivery>('POST', `/webhooks/${id(webhookId)}/test`),
  settings: (webhookId: string) => data<WebhookSettings>('GET', `/webhooks/${id(webhookId)}/settings`),
  updateSettings: (webhookId: string, change: SettingsChange) =>
    data<WebhookSettings>('PATCH', `/webhooks/${id(webhookId)}`, change),
  rotateSecret: (webhookId: string, overlapSeconds: number) =>
    data<RotatedSecret>('POST', `/webhooks/${id(webhookId)}/secret/rotate`, { overlapSeconds }),
  deliveries: (webhookId: string, params: { status?: string; limit: number; offset: number }) =>
    data<Delivery[]>('GET', `/webhooks/${id(webhookId)}/deliveries${query(params)}`),
  delivery: (webhookId: string, deliveryId: string) =>
    data<DeliveryDetail>('GET', `/webhooks/${id(webhookId)}/deliveries/${id(deliveryId)}`),
  workspaceDelivery: (deliveryId: string) => data<DeliveryDetail>('GET', `/deliveries/${id(deliveryId)}`),
  workspaceDeliveries: (params: { status?: string; statusCode?: string; limit: number; cursor?: string }) =>
    call<{ data: Delivery[]; nextCursor: string | null }>('GET', `/deliveries${query(params)}`),
  auditEvents: (params: { action?: string; limit: number; cursor?: string }) =>
    call<{ data: AuditEvent[]; nextCursor: string | null }>('GET', `/audit-events${query(params)}`),
  retry: (webhookId: string, deliveryId: string) =>
    data<Delivery>('POST', `/webhooks/${id(webhookId)}/deliveries/${id(deliveryId)}/retry`),
  recoverCount: (webhookId: string, since: string, until?: string) =>
    data<{ matched: number }>('POST', `/webhooks/${id(webhookId)}/recover`, { since, until, dryRun: true }),
  recover: (webhookId: string, since: string, until?: string) =>
    data<Recovery>('POST', `/webhooks/${id(webhookId)}/recover`, { since, until }),
  operationalWebhooks: () => data<OperationalWebhook[]>('GET', '/operational-webhooks'),
  registerOperational: (body: { url: string; events: string[] }) =>
    data<OperationalWebhook & { secret: string }>('POST', '/operational-webhooks', body),
  removeOperational: (operationalWebhookId: string) =>
    data<OperationalWebhook>('DELETE', `/operational-webhooks/${id(operationalWebhookId)}`),
  submissions: (calculatorId: string, params: { limit: number; cursor?: string; since?: string; filter?: string }) =>
    call<{ data: Submission[]; nextCursor: string | null }>(
      'GET',
      `/calculators/${id(calculatorId)}/submissions${query(params)}`,
    ),
  recovery: (webhookId: string, recoveryId: string) =>
    data<Recovery>('GET', `/webhooks/${id(webhookId)}/recoveries/${id(recoveryId)}`),
};

/** Every calculator of the workspace, page by page. */
export async function allCalculators(): Promise<Calculator[]> {
  const all: Calculator[] = [];
  for (;;) {
    const page = await api.calculators(all.length);
    all.push(...page);
    if (page.length < 100) return all;
  }
}

/** What a Retry did (DESIGN 7.2): a pending delivery's next attempt moves to now; an ended one gets one more. */
export const retried = (status: Delivery['status']): string =>
  status === 'pending'
    ? 'Retry queued: its next attempt is moved to now.'
    : 'Retry queued: one more attempt is sent now.';

export const describeError = (error: unknown): string =>
  error instanceof ApiError ? error.message : 'The service could not be reached. Try again.';
