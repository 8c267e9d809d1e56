// The load generator of `npm run bench:api`, its own process (pinned to another core than the
// server's): autocannon against one route, the result as JSON on stdout.
// Usage: tsx bench/api-load.ts < spec.json (a LoadSpec)
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';

export interface LoadSpec {
  url: string;
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  headers: Record<string, string>;
  body?: string;
  connections: number;
  seconds: number;
  /** A fresh Idempotency-Key on every request (a create, not a replay). */
  freshIdempotencyKey?: boolean;
}

export interface LoadResult {
  requests: number;
  non2xx: number;
  errors: number;
  seconds: number;
  p50: number;
  p99: number;
}

const spec: LoadSpec = JSON.parse(readFileSync(0, 'utf8'));
const result = await autocannon({
  url: spec.url,
  connections: spec.connections,
  duration: spec.seconds,
  // The shared machine can stall a response for seconds; a slow answer is measured, not dropped.
  timeout: 120,
  requests: [
    {
      method: spec.method,
      path: spec.path,
      headers: spec.headers,
      body: spec.body,
      ...(spec.freshIdempotencyKey && {
        setupRequest: (req) => ({ ...req, headers: { ...req.headers, 'idempotency-key': randomUUID() } }),
      }),
    },
  ],
});
const out: LoadResult = {
  requests: result['2xx'] + result.non2xx,
  non2xx: result.non2xx,
  errors: result.errors + result.timeouts,
  seconds: result.duration,
  p50: result.latency.p50,
  p99: result.latency.p99,
};
process.stdout.write(JSON.stringify(out));
