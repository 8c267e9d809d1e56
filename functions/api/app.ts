// The one factory of the REST app. The functions-framework target `api`, the local stack and
// the tests all build the app through `createApp(deps)`.
import { UUID_PATTERN } from '@mi/lib/async';
import { OpenAPIHono } from '@hono/zod-openapi';
import { cors } from 'hono/cors';
import { requestId } from 'hono/request-id';
import { routePath } from 'hono/route';
import { notReady } from '@mi/lib/db/pool';
import { DomainError } from '@mi/lib/errors';
import { domainErrorOf, sendProblem, ValidationError } from '@mi/lib/errors/problem';
import { instruments } from '@mi/lib/telemetry/metrics';
import { currentTraceHeaders, currentTraceId, withIncomingSpan } from '@mi/lib/telemetry/tracing';
import type { AppDeps, AppEnv } from './env';
import { registerDocs } from './docs';
import { limitBodies } from './middleware/body-limit';
import { registerRoutes } from './routes';

export function createApp(deps: AppDeps) {
  const app = new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (result.success) return;
      const errors = result.error.issues.map((i) => ({ path: i.path.join('.') || '(body)', message: i.message }));
      throw new ValidationError('unprocessable', `validation failed: ${errors.map((e) => e.path).join(', ')}`, errors);
    },
  });

  // Liveness: the process serves. First, so a probe runs no middleware: no span, log line or
  // request id (a probe every few seconds is worth none of them, and it costs the bare app's CPU).
  app.get('/healthz', (c) => c.json({ status: 'ok' }));

  // Browsers (decisions.md section 6): a listed origin is echoed on every answer, preflights
  // answer 204; an unlisted one gets no CORS header at all.
  const origins = new Set(deps.config.CORS_ALLOWED_ORIGINS);
  const corsOfListed = cors({
    origin: (origin) => origin,
    allowMethods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowHeaders: [
      'authorization',
      'content-type',
      'idempotency-key',
      'x-client-id',
      'traceparent',
      'tracestate',
      'content-digest',
      'if-match',
    ],
    exposeHeaders: ['Idempotent-Replayed', 'Retry-After', 'Location', 'ETag'],
    maxAge: 600,
  });
  // Hono's middleware adds its allow/expose headers for any origin; only listed ones get them.
  app.use('*', (c, next) => (origins.has(c.req.header('origin') ?? '') ? corsOfListed(c, next) : next()));

  // X-Request-Id: the caller's when it sends a well-formed one, else a new uuid; echoed on the answer.
  app.use('*', requestId());
  app.use('*', async (c, next) => {
    c.set('deps', deps);
    const clientId = c.req.header('x-client-id');
    c.set('clientId', clientId && UUID_PATTERN.test(clientId) ? clientId : null);
    const incoming = { traceparent: c.req.header('traceparent'), tracestate: c.req.header('tracestate') };
    // The request's server span (the http instrumentation makes none in the functions: register.ts).
    const attributes = { 'http.request.method': c.req.method, 'url.path': c.req.path };
    await withIncomingSpan(`${c.req.method} ${c.req.path}`, incoming, attributes, async (span) => {
      // Our span's context goes on to Pub/Sub attributes and outgoing calls (same trace id).
      c.set('trace', currentTraceHeaders());
      const traceId = currentTraceId();
      c.set('log', deps.log.child({ request_id: c.var.requestId, ...(traceId ? { trace_id: traceId } : {}) }));
      const started = performance.now();
      await next();
      // The route template (bounded cardinality), never the path: the last matched route is the handler's.
      const template = routePath(c, -1);
      const route = template === '*' || template.endsWith('/*') ? 'unmatched' : template;
      span.setAttributes({ 'http.route': route, 'http.response.status_code': c.res.status });
      instruments().httpDuration.record(performance.now() - started, {
        'http.request.method': c.req.method,
        'http.route': route,
        'http.response.status_code': c.res.status,
      });
      // The path only: query strings can hold signatures.
      c.var.log.info(
        { method: c.req.method, path: c.req.path, status: c.res.status, ms: Math.round(performance.now() - started) },
        'request',
      );
    });
  });

  // Bodies are bounded before being read whole; raw audio routes stream with their own limits.
  app.use('*', limitBodies({ json: deps.config.API_MAX_JSON_BYTES, bulk: deps.config.API_MAX_BULK_JSON_BYTES }));

  app.onError((err, c) => {
    const log = c.var.log ?? deps.log;
    // A client that went away mid-request (an upload cut short) is nobody's failure; nobody reads the answer.
    if (c.req.raw.signal.aborted) {
      log.info({ method: c.req.method, path: c.req.path, err: (err as Error).message }, 'client aborted the request');
      return sendProblem(c, new DomainError('bad_request', 'the request was aborted by the client'));
    }
    if (!(domainErrorOf(err) instanceof DomainError)) log.error({ err }, 'unhandled error');
    // A request that raced DELETE /me answers 404: decided where it was authenticated (middleware/auth.ts).
    return sendProblem(c, err);
  });

  // Readiness: the process can serve requests, i.e. the database answers.
  app.get('/readyz', async (c) => {
    const problem = await notReady(deps.db);
    return problem ? sendProblem(c, problem) : c.json({ status: 'ok' });
  });
  registerRoutes(app);
  registerDocs(app, deps);

  app.notFound((c) => {
    const allowed = allowedMethods(app, c.req.path);
    // A handler's own c.notFound() (an unknown docs asset) reaches here with its method allowed: a 404.
    if (allowed.length && !allowed.includes(c.req.method)) {
      return sendProblem(c, new DomainError('operation_not_allowed', `${c.req.method} is not allowed here`), {
        Allow: allowed.join(', '),
      });
    }
    return sendProblem(c, new DomainError('not_found', `no route for ${c.req.method} ${c.req.path}`));
  });
  return app;
}

export type App = ReturnType<typeof createApp>;

/** Methods registered for a path, for 405 answers. */
function allowedMethods(app: OpenAPIHono<AppEnv>, path: string): string[] {
  const methods = new Set<string>();
  for (const r of app.routes) {
    if (r.method === 'ALL' || r.path === '*' || r.path.endsWith('/*')) continue;
    const re = new RegExp(`^${r.path.replace(/:[^/]+/g, '[^/]+')}/?$`);
    if (re.test(path)) methods.add(r.method);
  }
  return [...methods].sort();
}
