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
describe('tracing of deliveries the sweeper woke (in-process, in-memory exporter)', () => {
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

  it("attempts a delivery the sweeper woke within its submission's trace, kept with the delivery", async () => {
    const setup = await setupWebhook(t, receiver.url);
    const submission = await submit(setup.api, setup.calculator.id);
    const own = await waitFor(
      () => spans().find((s) => s.name === 'delivery.attempt' && s.attributes['webhook.id'] === setup.webhook.id),
      5_000,
      "the submission's own attempt span",
    );
    // A delivery of the same submission committed whose host was never woken (a crash between the two),
    // due a minute ago: only the sweeper wakes its host.
    const lost = createId();
    await t.dataSource.query(
      `INSERT INTO deliveries (id, workspace_id, webhook_id, submission_id, status, attempt_count, max_attempts,
                               next_attempt_at, host, trace)
       SELECT $1, $2, $3::varchar, $4::varchar, 'pending', 0, 8, now() - interval '1 minute', url_destination(w.url),
              (SELECT d.trace FROM deliveries d WHERE d.submission_id = $4::varchar LIMIT 1)
       FROM webhooks w WHERE w.id = $3::varchar`,
      [lost, setup.workspace.id, setup.webhook.id, submission.id],
    );
    await waitFor(() => receiver.requests.some((r) => r.headers['webhook-id'] === lost), 15_000, 'the swept delivery');
    expect(receiver.requests.flatMap((r) => Object.keys(r.headers)).filter((h) => /trace|baggage/.test(h))).toEqual([]);

    const attempt = await waitFor(
      () => spans().find((s) => s.name === 'delivery.attempt' && s.attributes['delivery.id'] === lost),
      5_000,
      "the swept delivery's attempt span",
    );
    // The submission's trace, as its own delivery's attempt: not the sweep run's.
    expect(attempt.spanContext().traceId).toBe(own.spanContext().traceId);
    expect(parentOf(attempt)).toBe(parentOf(own));
    const runs = spans().filter((s) => s.name === 'scheduled sweep-overdue-deliveries');
    expect(runs.length).toBeGreaterThan(0);
    expect(runs.some((run) => run.spanContext().traceId === attempt.spanContext().traceId)).toBe(false);
    // Both children of the span that wrote the submission's deliveries, which kept its context.
    const outbox = spans().find((s) => s.spanContext().spanId === parentOf(own));
    expect(outbox?.name).toBe('delivery.outbox');
  }, 60_000);
});
