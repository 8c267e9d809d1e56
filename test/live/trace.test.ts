// Trace context goes on past the live service: a take started under a client's traceparent
// (from its start command, else its hello) carries it to the ML service's POST /streaming, the
// audio WebSocket upgrade and DELETE /streaming/{id}, and to the recording.finalized message.
// What is not valid W3C trace context is dropped on the way, never the take's ML stream.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { BusMessage } from '@mi/lib/adapters/bus';
import type { OpenedDatabase } from '@mi/lib/db/open';
import { runSweep } from '../../functions/sweep';
import {
  TestClient,
  createMeeting,
  fileEnv,
  openTestDatabase,
  range,
  startInstance,
  token,
  type Instance,
} from './helpers';

let database: OpenedDatabase;
let instance: Instance;
const finalized: BusMessage[] = [];
let subscription: { close(): Promise<void> };

beforeAll(async () => {
  database = await openTestDatabase();
  instance = await startInstance(database, fileEnv(), { ml: true });
  await instance.rt.bus.ensureTopic(instance.config.PUBSUB_TOPIC_RECORDING_FINALIZED);
  subscription = await instance.rt.bus.subscribeInstance(
    instance.config.PUBSUB_TOPIC_RECORDING_FINALIZED,
    `trace-${randomUUID().slice(0, 8)}`,
    (m) => void finalized.push(m),
  );
}, 60_000);
afterAll(async () => {
  await subscription?.close();
  await instance?.close();
  await database?.close();
});

const traceparent = () => `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;

async function recordAndStop(client: TestClient, meetingId: string, start: Record<string, unknown>): Promise<void> {
  expect(await client.start(meetingId, start)).toMatchObject({ type: 'RecordingStarted' });
  for (const seq of range(0, 9)) client.frame(seq);
  await client.acked(meetingId, 9);
  await client.stop(meetingId);
}

describe('trace context of a take', () => {
  it("should carry the start command's traceparent to every ML request and the finalized message", async () => {
    const t = await token(instance.config, 'traced');
    const fromHello = traceparent();
    const fromStart = traceparent();
    const client = await TestClient.open(instance.wsUrl);
    client.send({ type: 'hello', token: t, client_id: randomUUID(), traceparent: fromHello, tracestate: 'vendor=1' });
    await client.waitFor({ type: 'ready' });

    const first = await createMeeting(instance, t);
    await recordAndStop(client, first, {}); // no trace of its own: the hello's
    const second = await createMeeting(instance, t);
    await recordAndStop(client, second, { traceparent: fromStart });

    await vi.waitFor(() => expect(instance.ml!.requestTraces().filter((r) => r.request === 'drain')).toHaveLength(2), {
      timeout: 15_000,
    });
    const byTrace = (tp: string) =>
      instance
        .ml!.requestTraces()
        .filter((r) => r.trace.traceparent === tp)
        .map((r) => r.request);
    expect(byTrace(fromHello)).toEqual(['start', 'audio', 'drain']);
    expect(byTrace(fromStart)).toEqual(['start', 'audio', 'drain']);
    expect(instance.ml!.requestTraces().find((r) => r.trace.traceparent === fromHello)!.trace.tracestate).toBe(
      'vendor=1',
    );

    await runSweep(instance.rt);
    await vi.waitFor(
      () => expect(finalized.map((m) => (m.data as any).meeting_id)).toEqual(expect.arrayContaining([first, second])),
      { timeout: 15_000 },
    );
    const attributesOf = (meetingId: string) =>
      finalized.find((m) => (m.data as any).meeting_id === meetingId)!.attributes;
    expect(attributesOf(first)).toMatchObject({ traceparent: fromHello, tracestate: 'vendor=1' });
    expect(attributesOf(second)).toMatchObject({ traceparent: fromStart });
    client.close();
  });

  // Trace context is the client's to send and never the reason a take loses its ML stream: what
  // is outside the W3C grammar is dropped before it reaches a header or an attribute.
  const hostile = {
    'CR/LF': 'vendor=1\r\nx-injected: 1',
    'non-ASCII': 'vendor=caf\u00e9\u20ac',
    '100 KB': `vendor=${'a'.repeat(100 * 1024)}`,
    '33 members': Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(','),
    'a bad key': 'Vendor=1',
  };
  for (const [what, tracestate] of Object.entries(hostile)) {
    it(`should stream a take whose hello carries a tracestate with ${what} to the ML service, with the traceparent and without the tracestate`, async () => {
      const t = await token(instance.config, `hostile-${randomUUID().slice(0, 6)}`);
      const tp = traceparent();
      const client = await TestClient.open(instance.wsUrl);
      client.send({ type: 'hello', token: t, client_id: randomUUID(), traceparent: tp, tracestate });
      await client.waitFor({ type: 'ready' });
      const meetingId = await createMeeting(instance, t);
      await recordAndStop(client, meetingId, {});
      await vi.waitFor(
        () =>
          expect(
            instance
              .ml!.requestTraces()
              .filter((r) => r.trace.traceparent === tp)
              .map((r) => r.request),
          ).toEqual(['start', 'audio', 'drain']),
        { timeout: 15_000 },
      );
      for (const r of instance.ml!.requestTraces().filter((r) => r.trace.traceparent === tp))
        expect(r.trace).toEqual({ traceparent: tp });
      client.close();
    });
  }

  it('should drop a hostile tracestate of a start command and of the upgrade request, and a recording.finalized carries neither', async () => {
    const t = await token(instance.config, `hostile-start-${randomUUID().slice(0, 6)}`);
    const fromUpgrade = traceparent();
    const fromStart = traceparent();
    // Node sends latin-1 header bytes as they are: the service must not pass them on.
    const client = await TestClient.open(instance.wsUrl, { traceparent: fromUpgrade, tracestate: 'vendor=caf\u00e9' });
    client.send({ type: 'hello', token: t, client_id: randomUUID() });
    await client.waitFor({ type: 'ready' });
    const first = await createMeeting(instance, t);
    const second = await createMeeting(instance, t);
    await recordAndStop(client, first, {}); // the upgrade's trace
    await recordAndStop(client, second, { traceparent: fromStart, tracestate: 'vendor=1\nx: 1' });

    const requestsOf = (tp: string) => instance.ml!.requestTraces().filter((r) => r.trace.traceparent === tp);
    await vi.waitFor(() => expect(requestsOf(fromStart).map((r) => r.request)).toEqual(['start', 'audio', 'drain']), {
      timeout: 15_000,
    });
    await vi.waitFor(() => expect(requestsOf(fromUpgrade).map((r) => r.request)).toEqual(['start', 'audio', 'drain']), {
      timeout: 15_000,
    });
    for (const r of [...requestsOf(fromStart), ...requestsOf(fromUpgrade)])
      expect(Object.keys(r.trace)).toEqual(['traceparent']);

    await runSweep(instance.rt);
    await vi.waitFor(
      () => expect(finalized.map((m) => (m.data as any).meeting_id)).toEqual(expect.arrayContaining([first, second])),
      { timeout: 15_000 },
    );
    const attributesOf = (meetingId: string) =>
      finalized.find((m) => (m.data as any).meeting_id === meetingId)!.attributes;
    expect(attributesOf(first).traceparent).toBe(fromUpgrade);
    expect(attributesOf(second).traceparent).toBe(fromStart);
    expect(attributesOf(first).tracestate).toBeUndefined();
    expect(attributesOf(second).tracestate).toBeUndefined();
    client.close();
  });

  it('should drop a malformed traceparent with its tracestate, and record without either', async () => {
    const t = await token(instance.config, 'untraced');
    const client = await TestClient.connect(instance.wsUrl, t);
    const meetingId = await createMeeting(instance, t);
    const before = instance.ml!.requestTraces().length;
    await recordAndStop(client, meetingId, {
      traceparent: `00-${'0'.repeat(32)}-${'1'.repeat(16)}-01`,
      tracestate: 'vendor=1',
    });
    await vi.waitFor(
      () =>
        expect(
          instance
            .ml!.requestTraces()
            .slice(before)
            .map((r) => r.request),
        ).toEqual(['start', 'audio', 'drain']),
      { timeout: 15_000 },
    );
    for (const r of instance.ml!.requestTraces().slice(before)) expect(r.trace).toEqual({});
    client.close();
  });
});
