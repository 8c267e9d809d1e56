// OpenTelemetry tracing (metrics: metrics.ts): W3C trace context in (traceparent/tracestate) and out (Pub/Sub
// attributes, outgoing HTTP), spans exported over OTLP/HTTP (to a collector, or with Google
// credentials to the Telemetry API: otlp.ts). Export runs in the background and failures are
// dropped, so start-up and requests are unaffected when no collector listens. The spans of
// http, pg, gRPC and fetch calls come from the instrumentations telemetry-register.ts installs
// before the app loads (node --import); they use the provider set here.
import { context, propagation, SpanKind, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  SamplingDecision,
  TraceIdRatioBasedSampler,
  type Sampler,
} from '@opentelemetry/sdk-trace-base';
import type { Config } from '../config';
import { flushMetrics, initMetrics } from './metrics';
import { otlpTarget, preloadedInstrumentations, resourceAttributes, type OtlpConfig } from './otlp';
import { validTraceContext } from './trace-context';

let provider: BasicTracerProvider | null = null;

/**
 * Traces start at what the process serves (a request, a message, a WebSocket session), `ratio` of
 * them recorded (a span not recorded still carries its trace id to logs and Pub/Sub); a client
 * call outside of one (a lease heartbeat, a subscriber's ack, a token fetch: the instrumentations'
 * gRPC, http and fetch spans of background work) starts none, and its children follow it out.
 */
function rootSampler(ratio: number): Sampler {
  const served = new TraceIdRatioBasedSampler(ratio);
  return {
    shouldSample: (context, traceId, _name, kind) =>
      kind === SpanKind.CLIENT ? { decision: SamplingDecision.NOT_RECORD } : served.shouldSample(context, traceId),
    toString: () => `ServedRoots(${served})`,
  };
}

/** Once per process. Without export (tests), spans still carry context for propagation. */
export function initTelemetry(
  config: Pick<Config, 'OTEL_ENABLED' | 'OTEL_METRIC_EXPORT_INTERVAL' | 'OTEL_TRACES_SAMPLER_ARG'> & OtlpConfig,
  serviceName: string,
) {
  if (provider) return;
  const resource = resourceFromAttributes(resourceAttributes(config, serviceName));
  const exporter = config.OTEL_ENABLED ? new OTLPTraceExporter(otlpTarget(config, 'traces')) : null;
  provider = new BasicTracerProvider({
    resource,
    sampler: new ParentBasedSampler({ root: rootSampler(config.OTEL_TRACES_SAMPLER_ARG) }),
    spanProcessors: exporter ? [new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1000 })] : [],
  });
  trace.setGlobalTracerProvider(provider);
  for (const instrumentation of preloadedInstrumentations()) instrumentation.setTracerProvider(provider);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  initMetrics(config, resource);
}

export async function flushTelemetry() {
  await Promise.all([provider?.forceFlush().catch(() => {}), flushMetrics()]);
}

export const tracer = (): Tracer => trace.getTracer('meeting-intelligence');

/**
 * Runs fn in the server span of what the process serves (a request, a sweep), continuing the
 * trace of the caller's traceparent/tracestate; what is invalid is dropped, by the rule the live
 * service applies too (trace-context.ts).
 */
export function withIncomingSpan<T>(
  name: string,
  incoming: { traceparent?: unknown; tracestate?: unknown },
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const parent = propagation.extract(context.active(), validTraceContext(incoming) ?? {});
  return tracer().startActiveSpan(name, { kind: SpanKind.SERVER, attributes }, parent, async (span) => {
    try {
      return await fn(span);
    } finally {
      span.end();
    }
  });
}

/** traceparent/tracestate of the current span, for Pub/Sub attributes and outgoing HTTP. */
export function currentTraceHeaders(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

export function currentTraceId(): string | undefined {
  const id = trace.getActiveSpan()?.spanContext().traceId;
  return id && !/^0+$/.test(id) ? id : undefined;
}
