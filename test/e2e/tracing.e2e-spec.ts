import { execFileSync } from 'node:child_process';
import { Queue } from 'bullmq';
import { DELIVERY_QUEUE, destinationOf, drainJobId, type DrainJobData } from '../../src/delivery/host-wakes.js';
import { OtlpCollector, type CollectedSpan } from '../support/otlp-collector.js';
import { Receiver, waitFor } from '../support/receiver.js';
import { setupWebhook } from '../support/delivery.js';
import { createTestApp, freePort, TEST_REDIS_CLUSTER_NODES, type TestApp } from '../support/test-app.js';
import { ensureBuilt, spawnProcess, type WorkerProcess } from '../support/worker-process.js';

const SERVER = 2;
const PRODUCER = 4;
const CONSUMER = 5;

describe('tracing (OpenTelemetry, DESIGN 9)', () => {
  let t: TestApp;
  let receiver: Receiver;
  let collector: OtlpCollector;
  const processes: WorkerProcess[] = [];

  beforeAll(async () => {
    ensureBuilt();
    t = await createTestApp({ WORKER_ENABLED: 'false' });
    receiver = await Receiver.start();
    collector = await OtlpCollector.start();
  }, 120_000);
  afterEach(async () => {
    for (const p of processes.splice(0)) {
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      await p.exited;
    }
  });
  afterAll(async () => {
    await receiver.close();
    await collector.close();
    await t.close();
  });

  /** The built api (worker off) and, unless `worker` is false, a worker process: both tracing when `env` says. */
  async function start(env: Record<string, string>, worker = true) {
    const port = await freePort();
    const api = spawnProcess('dist/main.js', t.config, {
      ...env,
      PORT: String(port),
      WORKER_ENABLED: 'false',
      LOG_LEVEL: 'info',
    });
    processes.push(api);
    const started = [waitFor(() => api.output().includes('API listening'), 30_000, 'the api to start')];
    if (worker) {
      const w = spawnProcess('dist/worker.js', t.config, { ...env, LOG_LEVEL: 'info' });
      processes.push(w);
      started.push(waitFor(() => w.output().includes('Worker running'), 30_000, 'the worker to start'));
    }
    await Promise.all(started);
    return `http://127.0.0.1:${port}/api/v1`;
  }

  /** A webhook to the receiver; returns what a span must never show: the key, the secret, the payload. */
  async function setup() {
    const { key, calculator, secret, workspace } = await setupWebhook(t, receiver.url);
    return { key, calc: calculator, secret, marker: `answer-${workspace.id}` };
  }

  async function submit(api: string, key: string, calculatorId: string, marker: string) {
    const res = await fetch(`${api}/calculators/${calculatorId}/submissions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-ac-api-key': key },
      body: JSON.stringify({ data: { marker } }),
    });
    expect(res.status).toBe(200);
  }

  async function stopAll() {
    // SIGTERM: each process exports its buffered spans before it exits.
    for (const p of processes) p.child.kill('SIGTERM');
    const exits = await Promise.all(processes.map((p) => p.exited));
    expect(exits.map((e) => e.code)).toEqual(processes.map(() => 0));
  }

  // On a cluster the wake is in a shard's queue (its own hash tag) and the spans come from Cluster clients.
  it.each([
    ['one Redis', {}],
    ['a Redis Cluster with 4 queue shards', { REDIS_CLUSTER_NODES: TEST_REDIS_CLUSTER_NODES, QUEUE_SHARDS: '4' }],
  ])(
    'follows one submission in one trace on %s: request, wake, and the worker process claim, send and record',
    async (_on, redis: Record<string, string>) => {
      const { key, calc, secret, marker } = await setup();
      const seen = collector.spans.length;
      const api = await start({ ...redis, OTEL_EXPORTER_OTLP_ENDPOINT: collector.url });
      const before = receiver.requests.length;
      await submit(api, key, calc.id, marker);
      const delivered = await waitFor(() => receiver.requests[before], 15_000, 'the delivery');
      expect(delivered.body).toContain(marker);
      // Tracing on, and still no trace context goes to the receiver.
      expect(Object.keys(delivered.headers).filter((h) => /traceparent|tracestate|baggage/.test(h))).toEqual([]);
      await stopAll();
      expect(receiver.requests.length).toBe(before + 1);

      const wake = collector.spans
        .slice(seen)
        .find((s) => s.name === 'delivery.wake' && s.service === 'calc-webhooks-api')!;
      expect(wake).toBeDefined();
      const trace = collector.spans.slice(seen).filter((s) => s.traceId === wake.traceId);
      const byId = new Map(trace.map((s) => [s.spanId, s]));
      const one = (name: string, service: string) => {
        const found = trace.filter((s) => s.name === name && s.service === service);
        expect(found.map((s) => s.name)).toEqual([name]);
        return found[0];
      };
      // The api's request span (http instrumentation) is the root; the wake is within it.
      const request = trace.find((s) => s.kind === SERVER)!;
      expect(request).toMatchObject({ service: 'calc-webhooks-api', parentSpanId: '' });
      expect(request.attributes['http.route']).toBe('/api/v1/calculators/:calculatorId/submissions');
      const ancestors = (span: CollectedSpan): string[] =>
        span.parentSpanId && byId.has(span.parentSpanId)
          ? [span.parentSpanId, ...ancestors(byId.get(span.parentSpanId)!)]
          : [];
      expect(ancestors(wake)).toContain(request.spanId);
      expect(wake.kind).toBe(PRODUCER);
      // The worker process continues the trace the delivery's row kept: its attempt is within the request,
      // a child of the span that wrote the delivery (nothing of the trace goes through the host's wake).
      const attempt = one('delivery.attempt', 'calc-webhooks-worker');
      expect(attempt.kind).toBe(CONSUMER);
      expect(byId.get(attempt.parentSpanId)?.service).toBe('calc-webhooks-api');
      expect(ancestors(attempt)).toContain(request.spanId);
      expect(attempt.attributes).toMatchObject({
        'delivery.outcome': 'succeeded',
        'delivery.trigger': 'scheduled',
        'delivery.destination': destinationOf(receiver.url),
      });
      for (const step of ['delivery.connect', 'delivery.claim', 'delivery.send', 'delivery.record']) {
        expect(one(step, 'calc-webhooks-worker').parentSpanId).toBe(attempt.spanId);
      }
      expect(one('delivery.send', 'calc-webhooks-worker').attributes['http.response.status_code']).toBe(200);
      // The instrumentations' spans are in it too: the submission's INSERT in the api, the claim's query in the worker.
      const claim = one('delivery.claim', 'calc-webhooks-worker');
      const pgIn = (service: string) =>
        trace.filter((s) => s.service === service && s.attributes['db.system.name'] === 'postgresql');
      expect(pgIn('calc-webhooks-api').length).toBeGreaterThan(0);
      expect(pgIn('calc-webhooks-worker').some((s) => s.parentSpanId === claim.spanId)).toBe(true);
      // The wake's Redis commands (ioredis, imported from ESM) under it, sent to the Redis or a cluster node.
      const wakeCommands = trace.filter(
        (s) => s.parentSpanId === wake.spanId && s.attributes['db.system.name'] === 'redis',
      );
      expect(wakeCommands.length).toBeGreaterThan(0);
      // A failover may have moved a master to any node of the cluster: on it, anything but the single Redis.
      const single = Number(new URL(t.config.redisUrl).port || 6379);
      for (const span of wakeCommands) {
        if (redis.REDIS_CLUSTER_NODES) expect(span.attributes['server.port']).not.toBe(single);
        else expect(span.attributes['server.port']).toBe(single);
      }
      // Nothing secret in any span: not the API key, the webhook secret, nor the submission's content.
      const exported = JSON.stringify(collector.spans);
      for (const secretText of [key, secret, secret.replace(/^whsec_/, ''), marker])
        expect(exported).not.toContain(secretText);
    },
    90_000,
  );

  it("off: no span is exported and neither the delivery nor its host's wake carries a trace context", async () => {
    const { key, calc, marker } = await setup();
    const seen = collector.spans.length;
    const api = await start({}, false);
    await submit(api, key, calc.id, marker);
    const [row] = (await t.dataSource.query(`SELECT host, trace FROM deliveries WHERE calculator_id = $1`, [
      calc.id,
    ])) as { host: string; trace: unknown }[];
    expect(row).toEqual({ host: destinationOf(receiver.url), trace: null });
    const queue = new Queue<DrainJobData>(DELIVERY_QUEUE, {
      connection: { url: t.config.redisUrl },
      prefix: t.config.queuePrefix,
    });
    try {
      const job = await waitFor(() => queue.getJob(drainJobId(row.host)), 5_000, "the host's wake");
      expect(job.data).toEqual({ host: row.host });
    } finally {
      await queue.close();
    }
    await stopAll();
    expect(collector.spans.length).toBe(seen);
  }, 60_000);

  it('records none of a trace the api did not sample: the worker follows the sampled flag the delivery kept', async () => {
    const { key, calc, marker } = await setup();
    const seen = collector.spans.length;
    const before = receiver.requests.length;
    const api = await start({
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0',
    });
    await submit(api, key, calc.id, marker);
    await waitFor(() => receiver.requests[before], 15_000, 'the delivery');
    await stopAll();
    expect(collector.spans.slice(seen).map((s) => s.name)).toEqual([]);
  }, 60_000);

  it.each([
    ['off', {}, false],
    ['on', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1' }, true],
  ])('loads the OpenTelemetry SDK only when tracing is on (%s)', (_state, env, loaded) => {
    // The worker entrypoint up to its app: which modules the process loaded by then.
    const script = `
      import { registerHooks } from 'node:module';
      const loaded = [];
      registerHooks({ load: (url, context, next) => (loaded.push(url), next(url, context)) });
      const { startTracing } = await import(${JSON.stringify(new URL('../../dist/core/tracing/tracing.js', import.meta.url).href)});
      const { loadConfig } = await import(${JSON.stringify(new URL('../../dist/core/config/config.js', import.meta.url).href)});
      await startTracing(loadConfig().tracing, 'worker');
      process.stdout.write(JSON.stringify(loaded));`;
    const loadedUrls = JSON.parse(
      execFileSync(process.execPath, ['--input-type=module', '-e', script], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH, ...env },
      }),
    ) as string[];
    const sdk = loadedUrls.filter((url) => /\/@opentelemetry\/(sdk-trace|exporter-|instrumentation)/.test(url));
    expect(sdk.length > 0).toBe(loaded);
  });
});
