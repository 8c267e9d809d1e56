// Trace context: accepted from traceparent, exported as OTLP spans, and carried on to the
// Pub/Sub attributes of the events a request causes, with the origin client id.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BusMessage } from '@mi/lib/adapters/bus';
import { flushTelemetry } from '@mi/lib/telemetry/tracing';
import { listenToEvents, startApi, type ApiHarness } from '../harness';
import { until } from '../support/poll';

let api: ApiHarness;
let collector: Server;
const exported: string[] = [];
const messages: BusMessage[] = [];
let subscription: { close(): Promise<void> };

beforeAll(async () => {
  collector = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      exported.push(body);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
  const port = (collector.address() as AddressInfo).port;
  api = await startApi({ OTEL_ENABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` });
  const tracy = (await api.request('GET', '/me', { token: await api.token('tracy') })).body.id as string;
  subscription = await listenToEvents(api.rt, tracy, (m) => void messages.push(m));
});
afterAll(async () => {
  await subscription?.close();
  await api?.close();
  collector?.close();
});

describe('tracing', () => {
  it('should continue the incoming trace in exported spans and Pub/Sub attributes', async () => {
    const traceId = randomUUID().replace(/-/g, '');
    const clientId = randomUUID();
    const res = await api.request('POST', '/meetings', {
      token: await api.token('tracy'),
      body: { title: 'traced', source_type: 'text' },
      headers: {
        'idempotency-key': randomUUID(),
        traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
        tracestate: 'vendor=1',
        'x-client-id': clientId,
      },
    });
    expect(res.status).toBe(201);
    const msg = await until('the event on the bus', () =>
      messages.find((m) => (m.data as { body: { id: string } }).body.id === res.body.id),
    );
    expect(msg.attributes.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(msg.attributes.tracestate).toBe('vendor=1');
    expect(msg.attributes.origin_client_id).toBe(clientId);
    await flushTelemetry();
    await until('the exported span', () => exported.some((b) => b.includes(traceId)), { timeoutMs: 15_000 });
  });

  it('should drop a tracestate outside the W3C grammar as the live service does, keeping the trace', async () => {
    const traceId = randomUUID().replace(/-/g, '');
    const res = await api.request('POST', '/meetings', {
      token: await api.token('tracy'),
      body: { title: 'traced', source_type: 'text' },
      headers: {
        'idempotency-key': randomUUID(),
        traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
        tracestate: 'vendor=1,Bad Key=2',
      },
    });
    expect(res.status).toBe(201);
    const msg = await until('the event on the bus', () =>
      messages.find((m) => (m.data as { body: { id: string } }).body.id === res.body.id),
    );
    expect(msg.attributes.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(msg.attributes.tracestate).toBeUndefined();
  });

  it('should serve requests normally when no collector listens', async () => {
    await new Promise((r) => collector.close(r));
    const res = await api.request('GET', '/me', { token: await api.token('tracy') });
    expect(res.status).toBe(200);
    await flushTelemetry();
  });
});
