// The API's log lines as Cloud Logging reads them: severity, message and, for a request that
// carries a traceparent, the trace and span joined to it.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

const lines: Record<string, unknown>[] = [];
let api: ApiHarness;

beforeAll(async () => {
  api = await startApi(
    { LOG_LEVEL: 'info', GOOGLE_CLOUD_PROJECT: 'log-project' },
    { logDestination: { write: (line: string) => void lines.push(JSON.parse(line)) } },
  );
});
afterAll(() => api?.close());

const requestLine = (path: string) => lines.find((l) => l.message === 'request' && l.path === path);

describe('Cloud Logging-shaped request lines', () => {
  it('should carry severity, message, and the trace and span of the incoming traceparent', async () => {
    const traceId = randomBytes(16).toString('hex');
    const parentSpan = randomBytes(8).toString('hex');
    const res = await api.request('GET', '/readyz', { headers: { traceparent: `00-${traceId}-${parentSpan}-01` } });
    expect(res.status).toBe(200);
    const line = requestLine('/readyz');
    expect(line).toMatchObject({
      severity: 'INFO',
      message: 'request',
      status: 200,
      'logging.googleapis.com/trace': `projects/log-project/traces/${traceId}`,
      'logging.googleapis.com/trace_sampled': true,
    });
    // Our server span, a child of the caller's: a span id of its own.
    expect(line!['logging.googleapis.com/spanId']).toMatch(/^[0-9a-f]{16}$/);
    expect(line!['logging.googleapis.com/spanId']).not.toBe(parentSpan);
    expect(line).not.toHaveProperty('level');
    expect(line).not.toHaveProperty('msg');
  });

  it('should give every line a severity and a message, WARNING for a warning', async () => {
    await api.request('GET', '/me');
    api.rt.log.warn({ detail: 1 });
    expect(lines.length).toBeGreaterThan(0);
    for (const l of lines) {
      expect(['DEBUG', 'INFO', 'WARNING', 'ERROR', 'CRITICAL']).toContain(l.severity);
      expect(typeof l.message).toBe('string');
    }
    expect(lines.at(-1)).toMatchObject({ severity: 'WARNING', message: '', detail: 1 });
    // A request without a traceparent still gets a trace of its own (the span this service starts).
    expect(requestLine('/me')!['logging.googleapis.com/trace']).toMatch(
      /^projects\/log-project\/traces\/[0-9a-f]{32}$/,
    );
  });

  it("should log and answer the caller's X-Request-Id, or a new one when it sends none or a malformed one", async () => {
    const sent = await api.request('GET', '/openapi.json', { headers: { 'x-request-id': 'app-req-1234' } });
    expect(sent.headers.get('x-request-id')).toBe('app-req-1234');
    const lastLine = (path: string) => lines.filter((l) => l.message === 'request' && l.path === path).at(-1);
    expect(lastLine('/openapi.json')).toMatchObject({ request_id: 'app-req-1234' });
    const fresh = await api.request('GET', '/readyz', { headers: { 'x-request-id': 'bad id with spaces' } });
    const id = fresh.headers.get('x-request-id')!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(lastLine('/readyz')).toMatchObject({ request_id: id });
  });

  it('should answer a liveness probe (/healthz) without a request line, span or request id', async () => {
    const before = lines.length;
    const res = await api.request('GET', '/healthz', { headers: { 'x-request-id': 'probe-1234' } });
    expect(res.body).toEqual({ status: 'ok' });
    expect(res.headers.get('x-request-id')).toBeNull();
    await api.request('GET', '/readyz');
    // The /readyz line after it is written; none for the probe before it.
    expect(requestLine('/readyz')).toBeDefined();
    expect(lines.slice(before).filter((l) => l.path === '/healthz')).toEqual([]);
  });

  it.each([
    ['an unknown route (404)', 'GET', '/no-such-route', false, undefined],
    ['a wrong method (405)', 'DELETE', '/openapi.json', false, undefined],
    ['no token (401)', 'GET', '/me', false, undefined],
    ['a failed validation (422)', 'POST', '/meetings', true, { title: 7 }],
    ['an unknown record (404)', 'GET', '/meetings/00000000-0000-4000-8000-000000000000', true, undefined],
  ])('should answer %s with the X-Request-Id it logged', async (_name, method, path, auth, body) => {
    const token = auth ? await api.token('request-id-user') : undefined;
    const res = await api.request(method, path, { token, body, headers: { 'idempotency-key': crypto.randomUUID() } });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    const id = res.headers.get('x-request-id');
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const line = lines.filter((l) => l.message === 'request' && l.path === path).at(-1);
    expect(line).toMatchObject({ request_id: id, status: res.status });
  });
});
