import {
  context,
  propagation,
  trace,
  type ContextManager,
  type TextMapPropagator,
  type TracerProvider,
} from '@opentelemetry/api';

/** Whether an SDK registered its provider: until then `inSpan` makes no span. */
let registered = false;

/** Makes an SDK's provider, context manager and propagator the API's globals (startSdk, and tests). */
export function registerTracing(
  provider: TracerProvider,
  contextManager: ContextManager,
  propagator: TextMapPropagator,
): void {
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(propagator);
  trace.setGlobalTracerProvider(provider);
  registered = true;
}

export const tracingRegistered = (): boolean => registered;
