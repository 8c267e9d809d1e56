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
import { register as registerInThread, supportsSyncHooks } from 'import-in-the-middle/register-hooks.mjs';
import { INSTRUMENTATIONS } from './otlp';

// The loader hook wraps only the modules the instrumentations ask for. On the Node the
// deployment runs (24.11.1+) it runs in-thread (module.registerHooks); elsewhere on the loader
// thread, where every import() (the storage client makes one per request) costs a round trip to
// it: 13 % of the live service's CPU per frame on Node 20 (BENCHMARKS.md, Live: reading the figures).
let acknowledged = async () => {};
// In-thread, the hook learns of no Hook() call: it is told the modules the instrumentations below patch.
if (supportsSyncHooks()) registerInThread({ include: ['http', 'https', 'pg', '@grpc/grpc-js'] });
else {
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register('import-in-the-middle/hook.mjs', import.meta.url, registerOptions);
  acknowledged = waitForAllMessagesAcknowledged;
}

// OTEL_HTTP_SERVER_SPANS=app (the functions): the app makes each request's server span itself
// (functions/api/app.ts, functions/sweep.ts), and the http instrumentation leaves incoming requests
// alone. Even a request it ignores costs: it binds the request's and the response's emitters to a
// context, a fifth of a /healthz's CPU (docs/decisions/0003-functions-keep-the-request-domain.md).
const appServerSpans = process.env.OTEL_HTTP_SERVER_SPANS === 'app';
const instrumentations = [
  new HttpInstrumentation(
    appServerSpans
      ? { disableIncomingRequestInstrumentation: true }
      : // Health probes every few seconds are not worth a trace each.
        { ignoreIncomingRequestHook: (req) => req.url === '/healthz' },
  ),
  // A span per query, not per pool checkout; statements only (never parameter values).
  new PgInstrumentation({ requireParentSpan: true }),
  new GrpcInstrumentation(),
  new UndiciInstrumentation({ requireParentforSpans: true }),
];
registerInstrumentations({ instrumentations });
(globalThis as Record<symbol, unknown>)[INSTRUMENTATIONS] = instrumentations;

await acknowledged();
