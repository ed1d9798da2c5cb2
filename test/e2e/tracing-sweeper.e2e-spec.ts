import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { createId } from '@paralleldrive/cuid2';
import { registerTracing } from '../../src/core/tracing/tracing.js';
import { setupWebhook, submit } from '../support/delivery.js';
import { Receiver, waitFor } from '../support/receiver.js';
import { createTestApp, type TestApp } from '../support/test-app.js';

// The in-process app (api with its worker and scheduled work), with the SDK registered here as the
// entrypoints register it, so its spans are read from the SDK's in-memory exporter.
describe('tracing of re-enqueued deliveries (in-process, in-memory exporter)', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  let t: TestApp;
  let receiver: Receiver;

  beforeAll(async () => {
    registerTracing(provider, new AsyncLocalStorageContextManager().enable(), new W3CTraceContextPropagator());
    receiver = await Receiver.start();
    t = await createTestApp({ WORKER_ENABLED: 'true', SWEEP_INTERVAL_MS: '200' });
  }, 60_000);
  afterAll(async () => {
    await t.close();
    await receiver.close();
    await provider.shutdown();
    trace.disable();
    propagation.disable();
    context.disable();
  });

  const spans = () => exporter.getFinishedSpans();
  const parentOf = (span: ReturnType<typeof spans>[number]) => span.parentSpanContext?.spanId;

  it("attempts a delivery the sweeper re-enqueued within the sweep run's trace", async () => {
    const setup = await setupWebhook(t, receiver.url);
    const submission = await submit(setup.api, setup.calculator.id);
    // A delivery committed whose job never reached Redis (a crash between the two), due a minute ago.
    const lost = createId();
    await t.dataSource.query(
      `INSERT INTO deliveries (id, workspace_id, webhook_id, submission_id, status, attempt_count, max_attempts, next_attempt_at)
       VALUES ($1, $2, $3, $4, 'pending', 0, 8, now() - interval '1 minute')`,
      [lost, setup.workspace.id, setup.webhook.id, submission.id],
    );
    await waitFor(() => receiver.requests.some((r) => r.headers['webhook-id'] === lost), 15_000, 'the swept delivery');
    expect(receiver.requests.flatMap((r) => Object.keys(r.headers)).filter((h) => /trace|baggage/.test(h))).toEqual([]);

    const attempt = await waitFor(
      () => spans().find((s) => s.name === 'delivery.attempt' && s.attributes['delivery.id'] === lost),
      5_000,
      "the swept delivery's attempt span",
    );
    const byId = new Map(spans().map((s) => [s.spanContext().spanId, s]));
    const enqueue = byId.get(parentOf(attempt)!)!;
    expect(enqueue.name).toBe('delivery.enqueue');
    const run = byId.get(parentOf(enqueue)!)!;
    expect(run.name).toBe('scheduled sweep-overdue-deliveries');
    expect(parentOf(run)).toBeUndefined();
    expect(new Set([attempt, enqueue, run].map((s) => s.spanContext().traceId)).size).toBe(1);
    // The submission's own delivery went the usual way: its attempt is a child of the submission's enqueue.
    const own = await waitFor(
      () => spans().find((s) => s.name === 'delivery.attempt' && s.attributes['delivery.id'] !== lost),
      5_000,
      "the submission's own attempt span",
    );
    expect(byId.get(parentOf(own)!)!.name).toBe('delivery.enqueue');
    expect(own.spanContext().traceId).not.toBe(run.spanContext().traceId);
  }, 60_000);
});
