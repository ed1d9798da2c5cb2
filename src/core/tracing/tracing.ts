import {
  context,
  INVALID_SPAN_CONTEXT,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
} from '@opentelemetry/api';
import type { AppConfig } from '../config/config.js';
import type { TracedProcess } from './tracing-sdk.js';
import { tracingRegistered } from './tracing-registry.js';

export { registerTracing } from './tracing-registry.js';

/** The W3C trace context (`traceparent`, `tracestate`) of a span, as it travels inside a queue job. */
export type TraceCarrier = Record<string, string>;

// The API's no-op tracer until the SDK registers a provider (only when tracing is on).
const tracer = trace.getTracer('calc-webhooks');

let stop: (() => Promise<void>) | undefined;
// What `inSpan` hands its function while tracing is off: a span that records nothing.
const NO_SPAN = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/**
 * Starts the SDK when OTEL_EXPORTER_OTLP_ENDPOINT is set (and OTEL_SDK_DISABLED is not true); off, nothing
 * of it is even loaded. An entrypoint calls this before importing the app, so that the instrumentations
 * patch express, pg and ioredis as they are first required.
 */
export async function startTracing(tracing: AppConfig['tracing'], process: TracedProcess): Promise<void> {
  if (tracing === null) return;
  const { startSdk } = await import('./tracing-sdk.js');
  stop = startSdk(process, tracing.sampleRatio);
}

/** Exports the spans still buffered (at shutdown); a no-op when tracing is off. */
export async function stopTracing(): Promise<void> {
  await stop?.();
}

/** Runs `fn` in a span of its own that ends when `fn` settles; a thrown error marks the span failed. */
export function inSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
  options: { kind?: SpanKind; parent?: TraceCarrier; root?: boolean } = {},
): Promise<T> {
  // Off, a no-op span would still cost a promise and a context switch per call (a delivery makes five).
  // A throw still comes back as a rejection, as it does with a span.
  if (!tracingRegistered()) {
    try {
      return fn(NO_SPAN);
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }
  const parent = options.parent ? propagation.extract(ROOT_CONTEXT, options.parent) : context.active();
  return tracer.startActiveSpan(name, { kind: options.kind, attributes, root: options.root }, parent, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** The active span's context for a queue job; undefined when there is none (tracing off). */
export function currentTraceCarrier(): TraceCarrier | undefined {
  const carrier: TraceCarrier = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ? carrier : undefined;
}

export { SpanKind };
