import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { inSpan, registerTracing } from './tracing.js';

describe('inSpan', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  afterAll(async () => {
    await provider.shutdown();
    trace.disable();
    propagation.disable();
    context.disable();
  });

  it('with no SDK registered, runs the function with a span that records nothing, and makes none', async () => {
    // A provider set on the API directly is not the SDK's registration: inSpan still makes no span.
    trace.setGlobalTracerProvider(provider);
    const seen = await inSpan('off', {}, async (span) => span.isRecording());
    expect(seen).toBe(false);
    await expect(inSpan('off', {}, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    // A function that throws before returning its promise: a rejection too, not a throw from inSpan.
    const throwing = () => {
      throw new Error('sync boom');
    };
    let returned: Promise<unknown> | undefined;
    expect(() => (returned = inSpan('off', {}, throwing))).not.toThrow();
    await expect(returned).rejects.toThrow('sync boom');
    expect(exporter.getFinishedSpans()).toHaveLength(0);
    trace.disable();
  });

  it('once an SDK registered its provider, records each call as a span, nested, a thrown error marking it', async () => {
    registerTracing(provider, new AsyncLocalStorageContextManager().enable(), new W3CTraceContextPropagator());
    const value = await inSpan('outer', { n: 1 }, () => inSpan('inner', {}, async (span) => span.isRecording()));
    expect(value).toBe(true);
    await expect(inSpan('failing', {}, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name)).toEqual(['inner', 'outer', 'failing']);
    const [inner, outer, failing] = spans;
    expect(inner.parentSpanContext?.spanId).toBe(outer.spanContext().spanId);
    expect(outer.attributes).toEqual({ n: 1 });
    expect(failing.status).toMatchObject({ code: 2, message: 'boom' }); // SpanStatusCode.ERROR
  });
});
