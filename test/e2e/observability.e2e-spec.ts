import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ApiKeysService } from '../../src/auth/api-keys.service.js';
import { LOG_DESTINATION } from '../../src/core/logging/logging.module.js';
import { WorkerModule } from '../../src/worker.module.js';
import { client, registerWebhook } from '../support/management-api.js';
import { Receiver, waitFor, type Reply } from '../support/receiver.js';
import { createCalculator, createTestApp, createWorkspace, freePort, type TestApp } from '../support/test-app.js';

type LogLine = Record<string, unknown> & { raw: string };

// The in-process worker, retrying after milliseconds.
const FAST_DELIVERY = {
  WORKER_ENABLED: 'true',
  DELIVERY_RETRY_SCHEDULE: '100ms,200ms',
  DELIVERY_TIMEOUT_MS: '1000',
  SWEEP_INTERVAL_MS: '200',
};

/** A test app whose log lines (LOG_LEVEL=info) land in `lines` instead of stdout. */
const createLoggedApp = (lines: string[], overrides: Record<string, string>) =>
  createTestApp({ LOG_LEVEL: 'info', ...overrides }, (builder) =>
    builder.overrideProvider(LOG_DESTINATION).useValue({ write: (line: string) => void lines.push(line) }),
  );

/** `name{labels} value` lines of a Prometheus text exposition. */
function samples(text: string): { name: string; labels: Record<string, string>; value: number }[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const [, name, labelText = '', value] = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line)!;
      const labels = Object.fromEntries([...labelText.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
      return { name, labels, value: Number(value) };
    });
}

const sameLabels = (a: Record<string, string>, b: Record<string, string>) =>
  Object.keys(a).length === Object.keys(b).length && Object.entries(b).every(([k, v]) => a[k] === v);

describe('observability', () => {
  const lines: string[] = [];
  let t: TestApp;
  let receiver: Receiver;
  let replies: Reply[] = [];

  const logLines = (): LogLine[] => lines.map((raw) => ({ ...JSON.parse(raw), raw }));
  const requestLine = (id: string) =>
    waitFor(() => logLines().find((l) => l.reqId === id && l.status !== undefined), 5000, `log of ${id}`);
  let metricsUrl: string;
  const scrapeText = async () => {
    const res = await fetch(metricsUrl);
    expect(res.status).toBe(200);
    return res.text();
  };
  const scrape = async () => samples(await scrapeText());
  const metric = async (name: string, labels: Record<string, string> = {}) =>
    (await scrape()).find((s) => s.name === name && sameLabels(s.labels, labels))?.value ?? 0;

  /** A workspace whose one webhook, on one calculator, points at the receiver; `submit` fires it. */
  async function setupWebhook() {
    const { workspace, key } = await createWorkspace(t);
    const calculator = await createCalculator(t, workspace.id);
    const api = client(t, key);
    const webhook = await registerWebhook(api, { url: receiver.url, calculators: [calculator.id] });
    const submit = () => api.post(`/calculators/${calculator.id}/submissions`, { data: { a: 1 } }).expect(200);
    return { workspace, key, webhook, submit };
  }

  beforeAll(async () => {
    const metricsPort = await freePort();
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    t = await createLoggedApp(lines, { ...FAST_DELIVERY, METRICS_PORT: String(metricsPort) });
    receiver = await Receiver.start(() => replies.shift() ?? { status: 200 });
  });
  afterAll(async () => {
    await receiver.close();
    await t.close();
  });

  describe('request logs', () => {
    it('echoes an incoming x-request-id and logs the request under it, credentials redacted', async () => {
      const { workspace, key } = await setupWebhook();
      const res = await t
        .http()
        .get('/api/v1/me')
        .set('x-ac-api-key', key)
        .set('x-request-id', 'obs-me-1')
        .set('authorization', 'Bearer not-for-logs')
        .set('cookie', 'session=not-for-logs-either')
        .expect(200);
      expect(res.headers['x-request-id']).toBe('obs-me-1');
      const line = await requestLine('obs-me-1');
      expect(line).toMatchObject({
        level: 'info',
        method: 'GET',
        path: '/api/v1/me',
        route: '/api/v1/me',
        status: 200,
        workspaceId: workspace.id,
      });
      expect(typeof line.responseTime).toBe('number');
      expect(line.raw).not.toContain(key);
      expect(line.raw).not.toContain('not-for-logs');
    });

    it('generates a request id when none, or an unusable one, is sent', async () => {
      const none = await t.http().get('/api/v1/me').expect(401);
      expect(none.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      const unusable = await t.http().get('/api/v1/me').set('x-request-id', 'a b "c"').expect(401);
      expect(unusable.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      const line = await requestLine(unusable.headers['x-request-id']);
      expect(line).toMatchObject({ route: '/api/v1/me', status: 401, workspaceId: null });
    });

    it('quotes the request id in a 500 and in the logged cause', async () => {
      const { key } = await setupWebhook();
      const keys = t.app.get(ApiKeysService);
      const authenticate = keys.authenticate;
      keys.authenticate = () => Promise.reject(new Error('simulated failure'));
      try {
        const res = await t
          .http()
          .get('/api/v1/me')
          .set('x-ac-api-key', key)
          .set('x-request-id', 'obs-500')
          .expect(500);
        expect(res.headers['x-request-id']).toBe('obs-500');
        expect(res.body.error).toEqual({ code: 'internal_server_error', message: expect.stringContaining('obs-500') });
      } finally {
        keys.authenticate = authenticate;
      }
      const cause = logLines().find((l) => l.context === 'HttpExceptionFilter' && String(l.msg).includes('obs-500'));
      expect(cause).toMatchObject({
        level: 'error',
        reqId: 'obs-500', // every line written during a request carries it
        err: { stack: expect.stringContaining('simulated failure') },
      });
      expect(await requestLine('obs-500')).toMatchObject({ level: 'error', status: 500 });
    });

    it('writes each delivery attempt as one structured line', async () => {
      const { webhook, submit } = await setupWebhook();
      await submit();
      const line = await waitFor(
        () => logLines().find((l) => l.context === 'DeliveryAttempt' && l.webhookId === webhook.id),
        5000,
        'attempt log line',
      );
      expect(line).toMatchObject({
        level: 'info',
        msg: 'delivery attempt',
        deliveryId: expect.any(String),
        attempt: 1,
        statusCode: 200,
        outcome: 'succeeded',
        durationMs: expect.any(Number),
      });
    });
  });

  describe('GET /metrics on METRICS_PORT', () => {
    it('is not served on the public port: a JSON 404 like any unknown path', async () => {
      const res = await t.http().get('/metrics').expect(404);
      expect(res.body).toEqual({ error: { code: 'not_found', message: 'No route for GET /metrics' } });
      expect(res.text).not.toContain('# TYPE');
    });

    it('serves Prometheus text without an API key', async () => {
      const res = await fetch(metricsUrl);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      const text = await res.text();
      for (const name of [
        'http_request_duration_seconds',
        'webhook_deliveries_total',
        'webhook_delivery_attempt_duration_seconds',
        'webhook_delivery_queue_jobs',
        'webhook_delivery_oldest_pending_age_seconds',
        'process_cpu_seconds_total',
      ]) {
        expect(text).toContain(`# TYPE ${name} `);
      }
    });

    it('labels request durations by route pattern and status, never by raw path', async () => {
      const { key } = await setupWebhook();
      await t.http().get('/api/v1/webhooks/doesnotexist123').set('x-ac-api-key', key).expect(404);
      const route = { method: 'GET', route: '/api/v1/webhooks/:webhookId', status: '404' };
      expect(await metric('http_request_duration_seconds_count', route)).toBeGreaterThanOrEqual(1);
      expect(await scrapeText()).not.toContain('doesnotexist123');
    });

    it('counts delivery outcomes and attempt durations as attempts are decided', async () => {
      const before = {
        retry: await metric('webhook_deliveries_total', { outcome: 'retry' }),
        succeeded: await metric('webhook_deliveries_total', { outcome: 'succeeded' }),
        timed: await metric('webhook_delivery_attempt_duration_seconds_count', { outcome: 'succeeded' }),
      };
      replies = [{ status: 500 }];
      const { submit } = await setupWebhook();
      await submit();
      await waitFor(
        async () => (await metric('webhook_deliveries_total', { outcome: 'succeeded' })) === before.succeeded + 1,
        5000,
        'succeeded counter',
      );
      expect(await metric('webhook_deliveries_total', { outcome: 'retry' })).toBe(before.retry + 1);
      expect(await metric('webhook_delivery_attempt_duration_seconds_count', { outcome: 'succeeded' })).toBe(
        before.timed + 1,
      );
    });

    it('reports host wakes by state and how overdue the oldest pending delivery is', async () => {
      replies = [{ status: 503, headers: { 'retry-after': '3600' } }];
      const { webhook, submit } = await setupWebhook();
      await submit();
      await waitFor(async () => (await metric('webhook_delivery_queue_jobs', { state: 'delayed' })) >= 1, 5000);
      // The drain leaves once the answer is in; the attempt's record (its retry an hour away) may come after.
      await waitFor(
        async () =>
          (
            (await t.dataSource.query(`SELECT 1 FROM deliveries WHERE webhook_id = $1 AND attempt_count = 1`, [
              webhook.id,
            ])) as unknown[]
          ).length === 1,
        5000,
        'the recorded attempt',
      );
      expect(await metric('webhook_delivery_queue_jobs', { state: 'waiting' })).toBe(0);
      expect(await metric('webhook_delivery_queue_jobs', { state: 'active' })).toBe(0);
      expect(await metric('webhook_delivery_oldest_pending_age_seconds')).toBe(0);
      // Its host's wake waits an hour (Retry-After); make the delivery itself overdue by 90 s.
      await t.dataSource.query(
        `UPDATE deliveries SET next_attempt_at = now() - interval '90 seconds' WHERE webhook_id = $1`,
        [webhook.id],
      );
      const age = await metric('webhook_delivery_oldest_pending_age_seconds');
      expect(age).toBeGreaterThanOrEqual(90);
      expect(age).toBeLessThan(120);
    });
  });

  describe('worker process metrics', () => {
    let worker: INestApplicationContext;
    let port: number;
    beforeAll(async () => {
      port = await freePort();
      worker = await NestFactory.createApplicationContext(WorkerModule.forRoot({ ...t.config, metricsPort: port }));
    });
    afterAll(() => worker.close());

    it('serves GET /metrics on METRICS_PORT with the delivery metrics', async () => {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      const text = await res.text();
      expect(text).toContain('# TYPE webhook_deliveries_total counter');
      expect(text).toContain('# TYPE webhook_delivery_attempt_duration_seconds histogram');
      expect((await fetch(`http://127.0.0.1:${port}/other`)).status).toBe(404);
    });
  });
});
