import { Webhook } from 'standardwebhooks';
import { LOG_DESTINATION } from '../../src/core/logging/logging.module.js';
import type { DeliveryDetailResponse, DeliveryResponse } from '../../src/delivery/log/delivery.serializer.js';
import type { SubmissionResponse } from '../../src/submissions/submission.response.js';
import { client, expectJson, keysOf, registerWebhook, signingSecret, type Client } from './management-api.js';
import { expectNothingFor, Receiver, waitFor, type Behaviour, type ReceivedRequest } from './receiver.js';
import { createCalculator, createTestApp, createWorkspace, freePort, type TestApp } from './test-app.js';

/** The in-process worker with a schedule of milliseconds: 3 attempts in all, 1 s attempt timeout. */
export const FAST_DELIVERY = {
  WORKER_ENABLED: 'true',
  DELIVERY_RETRY_SCHEDULE: '100ms,200ms',
  DELIVERY_TIMEOUT_MS: '1000',
  SWEEP_INTERVAL_MS: '200',
};
export const FAST_MAX_ATTEMPTS = 3;
/** Watched for a wrong further send by that worker: it spans its longest retry delay (200 ms + 20%) and five sweeps. */
const FAST_EXTRA_SEND_WINDOW_MS = 1_000;

/** Fails if any of the receivers gets another request within FAST_EXTRA_SEND_WINDOW_MS from now. */
export function expectNoFurtherRequests(...receivers: Receiver[]): Promise<void> {
  const counts = receivers.map((r) => r.requests.length);
  return expectNothingFor(FAST_EXTRA_SEND_WINDOW_MS, 'further request to a receiver', () =>
    receivers.some((r, i) => r.requests.length > counts[i]),
  );
}

/**
 * One app per test file (or describe) with the fast in-process worker, `overrides` on top; receivers started
 * through it close after each test. With `logLines`, the app's log lines land there instead of stdout.
 */
/** `METRICS_PORT: 'free'` in `overrides`: the app serves /metrics on a free port, at `env.metricsUrl`. */
export function useFastDeliveryApp(overrides: Record<string, string> = {}, logLines?: string[]) {
  const receivers: Receiver[] = [];
  const env = {
    t: undefined as unknown as TestApp,
    metricsUrl: '',
    startReceiver: async (behaviour?: Behaviour) => {
      const receiver = await Receiver.start(behaviour);
      receivers.push(receiver);
      return receiver;
    },
  };
  beforeAll(async () => {
    const settings: Record<string, string> = { ...FAST_DELIVERY, ...overrides };
    if (settings.METRICS_PORT === 'free') {
      settings.METRICS_PORT = String(await freePort());
      env.metricsUrl = `http://127.0.0.1:${settings.METRICS_PORT}/metrics`;
    }
    env.t = await createTestApp(settings, (builder) =>
      logLines
        ? builder.overrideProvider(LOG_DESTINATION).useValue({ write: (line: string) => logLines.push(line) })
        : builder,
    );
  });
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });
  afterAll(() => env.t.close());
  return env;
}

export const SUBMISSION_KEYS = ['calculatorId', 'createdAt', 'data', 'finished', 'id', 'meta', 'updatedAt'];
export const DELIVERY_KEYS = [
  'attemptCount',
  'completedAt',
  'createdAt',
  'event',
  'id',
  'lastAttemptAt',
  'lastError',
  'lastStatusCode',
  'maxAttempts',
  'nextAttemptAt',
  'status',
  'submissionId',
  'updatedAt',
  'webhookId',
];
export const DELIVERY_DETAIL_KEYS = [...DELIVERY_KEYS, 'attempts', 'payload'].sort();
export const ATTEMPT_KEYS = [
  'attemptNumber',
  'durationMs',
  'error',
  'responseBody',
  'startedAt',
  'statusCode',
  'succeeded',
  'trigger',
];

/** A fresh workspace with one calculator and one webhook on it pointing at `url`. */
export async function setupWebhook(t: TestApp, url: string) {
  const { workspace, key } = await createWorkspace(t);
  const api = client(t, key);
  const calculator = await createCalculator(t, workspace.id);
  const webhook = await registerWebhook(api, { url, calculators: [calculator.id] });
  const secret = await signingSecret(api, webhook.id);
  return { api, key, workspace, calculator, webhook, secret };
}

export async function submit(api: Client, calculatorId: string, body: object = { data: { answer: 42 } }) {
  const res = await api.post(`/calculators/${calculatorId}/submissions`, body);
  expectJson(res, 200);
  expect(keysOf(res.body)).toEqual(['data']);
  return res.body.data as SubmissionResponse;
}

export async function listDeliveries(api: Client, webhookId: string, query = ''): Promise<DeliveryResponse[]> {
  const res = await api.get(`/webhooks/${webhookId}/deliveries${query}`);
  expectJson(res, 200);
  expect(keysOf(res.body)).toEqual(['data']);
  return res.body.data as DeliveryResponse[];
}

export async function getDelivery(api: Client, webhookId: string, deliveryId: string): Promise<DeliveryDetailResponse> {
  const res = await api.get(`/webhooks/${webhookId}/deliveries/${deliveryId}`);
  expectJson(res, 200);
  expect(keysOf(res.body)).toEqual(['data']);
  return res.body.data as DeliveryDetailResponse;
}

/** The webhook's only delivery, once the worker has ended it (any status but pending). */
export async function waitForEndedDelivery(api: Client, webhookId: string, timeoutMs = 10_000) {
  const ended = await waitFor(
    async () => {
      const list = await listDeliveries(api, webhookId);
      return list.length === 1 && list[0].status !== 'pending' ? list[0] : null;
    },
    timeoutMs,
    `the delivery of webhook ${webhookId} to end`,
  );
  return getDelivery(api, webhookId, ended.id);
}

/** The payload, after checking the Standard Webhooks signature as a receiver would. */
export function verifySignature(secret: string, request: ReceivedRequest): unknown {
  return new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
}

export async function countRows(t: TestApp, table: 'submissions' | 'deliveries', workspaceId: string) {
  const [row] = await t.dataSource.query(`SELECT count(*)::int AS n FROM ${table} WHERE workspace_id = $1`, [
    workspaceId,
  ]);
  return row.n as number;
}
