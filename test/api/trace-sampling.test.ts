// Trace sampling (OTEL_TRACES_SAMPLER_ARG, as deployed below 1): a trace this process starts is
// recorded by its trace id's share; a caller's sampled traceparent is always followed. A trace not
// recorded keeps its id on the events' Pub/Sub attributes, flagged as not sampled.
// Its own file: a process initialises its telemetry once, with the first app's configuration.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BusMessage } from '@mi/lib/adapters/bus';
import { flushTelemetry } from '@mi/lib/telemetry/tracing';
import { listenToEvents, startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let collector: Server;
let exported = '';
const messages: BusMessage[] = [];
let subscription: { close(): Promise<void> };
let token: string;

beforeAll(async () => {
  collector = createServer((req, res) => {
    req.on('data', (d) => (exported += d));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
  const port = (collector.address() as AddressInfo).port;
  api = await startApi({
    OTEL_ENABLED: 'true',
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
    OTEL_TRACES_SAMPLER_ARG: '0',
  });
  token = await api.token('sampled');
  const userId = (await api.request('GET', '/me', { token })).body.id as string;
  subscription = await listenToEvents(api.rt, userId, (m) => void messages.push(m));
});
afterAll(async () => {
  await subscription?.close();
  await api?.close();
  collector?.close();
});

/** Creates a meeting; the traceparent its event carried on Pub/Sub. */
async function create(headers: Record<string, string> = {}): Promise<string> {
  const res = await api.request('POST', '/meetings', {
    token,
    body: { title: 'sampling', source_type: 'text' },
    headers: { 'idempotency-key': randomUUID(), ...headers },
  });
  expect(res.status).toBe(201);
  await expect
    .poll(() => messages.some((m) => (m.data as { body: { id: string } }).body.id === res.body.id))
    .toBe(true);
  const msg = messages.find((m) => (m.data as { body: { id: string } }).body.id === res.body.id)!;
  return msg.attributes.traceparent;
}

describe('trace sampling', () => {
  it('should record no trace it starts itself at ratio 0, yet carry the trace id, flagged unsampled', async () => {
    const traceparent = await create();
    const [, traceId, , flags] = traceparent.split('-');
    expect(flags).toBe('00');
    // A caller's sampled trace is recorded (and flushed after the first): once it is exported,
    // the unsampled one would have been too.
    const followed = randomUUID().replace(/-/g, '');
    expect(await create({ traceparent: `00-${followed}-00f067aa0ba902b7-01` })).toMatch(/-01$/);
    await flushTelemetry();
    await expect.poll(() => exported.includes(followed), { timeout: 15_000 }).toBe(true);
    expect(exported).not.toContain(traceId);
  });
});
