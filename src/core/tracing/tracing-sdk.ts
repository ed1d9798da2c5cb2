import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { registerInstrumentations, type Instrumentation } from '@opentelemetry/instrumentation';
import { ExpressInstrumentation, ExpressLayerType } from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { createRequire } from 'node:module';
import { registerTracing } from './tracing-registry.js';

/** Which process exports: the service name in the trace viewer, unless OTEL_SERVICE_NAME names another. */
export type TracedProcess = 'api' | 'worker';

// Probes and scrapes every few seconds would bury the submissions' traces.
const UNTRACED_PATHS = /^\/(health|metrics)(\/|$|\?)/;
// The buffered spans' last export may take this long at shutdown, within the shutdown deadline.
const SHUTDOWN_EXPORT_MS = 3_000;

/**
 * Only what this service's traces need, never auto-instrumentations-node: its undici instrumentation
 * would put a traceparent on the requests to receivers. Outgoing node:http is not traced for the same
 * reason. Loaded only when tracing is on (tracing.ts imports this file on demand).
 */
function instrumentations(process: TracedProcess): Instrumentation[] {
  const stores = [
    // Parameterized SQL only, never the values (enhancedDatabaseReporting stays off); no span outside a
    // trace, nor for taking a pooled connection (one more span per statement, most of them instant).
    new PgInstrumentation({ requireParentSpan: true, ignoreConnectSpans: true }),
    // The command name only: BullMQ's script arguments hold job data, and keys can name workspaces.
    new IORedisInstrumentation({ requireParentSpan: true, dbStatementSerializer: (command) => command }),
  ];
  if (process === 'worker') return stores;
  return [
    new HttpInstrumentation({
      disableOutgoingRequestInstrumentation: true,
      ignoreIncomingRequestHook: (request) => UNTRACED_PATHS.test(request.url ?? ''),
    }),
    // For the route pattern on the request's span (its name); no span per middleware, router or handler.
    new ExpressInstrumentation({
      ignoreLayersType: [ExpressLayerType.MIDDLEWARE, ExpressLayerType.ROUTER, ExpressLayerType.REQUEST_HANDLER],
    }),
    ...stores,
  ];
}

/** Registers the SDK globally: provider, context manager, W3C propagator, instrumentations. Returns its stop. */
export function startSdk(process: TracedProcess, sampleRatio: number): () => Promise<void> {
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': `calc-webhooks-${process}` }))
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, when set, win.
    .merge(detectResources({ detectors: [envDetector] }));
  // The exporter reads OTEL_EXPORTER_OTLP_ENDPOINT (and _HEADERS, _TIMEOUT) itself.
  const provider = new TracerProvider({
    resource,
    // A trace's fate is decided where it starts (the request, a scheduled run) and followed downstream.
    sampler: new ParentBasedSampler({
      root: sampleRatio >= 1 ? new AlwaysOnSampler() : new TraceIdRatioBasedSampler(sampleRatio),
    }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })],
  });
  registerTracing(provider, new AsyncLocalStorageContextManager().enable(), new W3CTraceContextPropagator());
  registerInstrumentations({ instrumentations: instrumentations(process), tracerProvider: provider });
  // The instrumentations hook require(), not import: ioredis is imported by ESM code only (ours, BullMQ's
  // ESM build), so it is required once here to be patched; the import shares its (CommonJS) exports.
  createRequire(import.meta.url)('ioredis');
  return () =>
    Promise.race([
      provider.shutdown(),
      new Promise<void>((resolve) => setTimeout(resolve, SHUTDOWN_EXPORT_MS).unref()),
    ]);
}
