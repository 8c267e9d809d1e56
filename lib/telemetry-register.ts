// The preload of every deployable: `node --import ./telemetry-register.js <app>` (the live
// container's CMD; NODE_OPTIONS on the functions). It registers the OpenTelemetry
// instrumentations of http (server and client spans), pg (a span per query), gRPC (the
// Pub/Sub and Firestore clients) and undici (fetch), before the application's first import: the
// instrumentations patch a module while it loads, ESM through import-in-the-middle's loader hook
// (registered here) and CommonJS through require-in-the-middle, so they must be in place first.
// initTelemetry hands them its tracer provider when it runs (INSTRUMENTATIONS, otlp.ts); their
// spans take its exporter, and until then (or without export) they are no-ops.
import { register } from 'node:module';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { GrpcInstrumentation } from '@opentelemetry/instrumentation-grpc';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { createAddHookMessageChannel } from 'import-in-the-middle';
import { INSTRUMENTATIONS } from './otlp';

// The loader hook wraps only the modules the instrumentations ask for (they tell it over the channel).
const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
register('import-in-the-middle/hook.mjs', import.meta.url, registerOptions);

const instrumentations = [
  // Health probes every few seconds are not worth a trace each.
  new HttpInstrumentation({ ignoreIncomingRequestHook: (req) => req.url === '/healthz' }),
  // A span per query, not per pool checkout; statements only (never parameter values).
  new PgInstrumentation({ requireParentSpan: true }),
  new GrpcInstrumentation(),
  new UndiciInstrumentation({ requireParentforSpans: true }),
];
registerInstrumentations({ instrumentations });
(globalThis as Record<symbol, unknown>)[INSTRUMENTATIONS] = instrumentations;

await waitForAllMessagesAcknowledged();
