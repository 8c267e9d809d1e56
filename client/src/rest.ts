// The REST client: openapi-fetch over the generated types, adding what every call of ours
// carries — bearer token, X-Client-Id (our own WebSocket gets no echo of our changes), a
// traceparent, and a fresh Idempotency-Key on the operations that require one — and retrying
// 503/429 with Retry-After. Headers are set once per logical call, before the retrying fetch,
// so every retry repeats the same key and trace.
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import { IDEMPOTENT_OPERATIONS } from './idempotent-operations.js';
import { DEFAULT_RETRY, retryingFetch, type RetryOptions } from './retry.js';
import type { paths } from './schema.js';
import { newTraceparent, type TraceHeaders } from './trace.js';

export type RestClient = Client<paths>;

export interface RestClientOptions {
  baseUrl: string;
  /** A user JWT or the service token; a function is asked on every call (tokens expire). */
  token: string | (() => string | Promise<string>);
  /** Sent as X-Client-Id: the uuid the same client says in its WebSocket hello. */
  clientId?: string;
  /** Trace context to continue (e.g. the request being handled); a fresh trace per call otherwise. */
  trace?: () => TraceHeaders | undefined;
  retry?: Partial<RetryOptions>;
  /** Per attempt: a request without an answer in this time fails (a TimeoutError). */
  timeoutMs?: number;
  /** The fetch to send with (tests, proxies); the global one otherwise. */
  fetch?: (request: Request) => Promise<Response>;
}

export function createRestClient(opts: RestClientOptions): RestClient {
  const send = opts.fetch ?? ((r: Request) => globalThis.fetch(r));
  const base =
    opts.timeoutMs === undefined
      ? send
      : (r: Request) => send(new Request(r, { signal: AbortSignal.timeout(opts.timeoutMs!) }));
  const client = createClient<paths>({
    baseUrl: opts.baseUrl.replace(/\/$/, ''),
    fetch: retryingFetch(base, { ...DEFAULT_RETRY, ...opts.retry }),
  });
  client.use(callHeaders(opts));
  return client;
}

function callHeaders(opts: RestClientOptions): Middleware {
  return {
    async onRequest({ request, schemaPath }) {
      const h = request.headers;
      const token = typeof opts.token === 'function' ? await opts.token() : opts.token;
      h.set('authorization', `Bearer ${token}`);
      if (opts.clientId && !h.has('x-client-id')) h.set('x-client-id', opts.clientId);
      if (!h.has('traceparent')) {
        const trace = opts.trace?.() ?? { traceparent: newTraceparent() };
        h.set('traceparent', trace.traceparent);
        if (trace.tracestate) h.set('tracestate', trace.tracestate);
      }
      // A caller's own key (e.g. one derived from its input, stable across restarts) wins.
      if (IDEMPOTENT_OPERATIONS.has(`${request.method} ${schemaPath}`) && !h.has('idempotency-key'))
        h.set('idempotency-key', crypto.randomUUID());
      return request;
    },
  };
}
