// Trace context goes on past the live service: a take started under a client's traceparent
// (from its start command, else its hello) carries it to the ML service's POST /streaming, the
// audio WebSocket upgrade and DELETE /streaming/{id}, and to the recording.finalized message.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { BusMessage } from '@mi/lib/bus';
import type { OpenedDatabase } from '@mi/lib/db/open';
import { runSweep } from '../../functions/sweep';
import { TestClient, createMeeting, fileEnv, openTestDatabase, range, startInstance, token, type Instance } from './helpers';

let database: OpenedDatabase;
let instance: Instance;
const finalized: BusMessage[] = [];
let subscription: { close(): Promise<void> };

beforeAll(async () => {
  database = await openTestDatabase();
  instance = await startInstance(database, fileEnv(), { ml: true });
  await instance.rt.bus.ensureTopic(instance.config.PUBSUB_TOPIC_RECORDING_FINALIZED);
  subscription = await instance.rt.bus.subscribeInstance(instance.config.PUBSUB_TOPIC_RECORDING_FINALIZED, `trace-${randomUUID().slice(0, 8)}`, (m) => void finalized.push(m));
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
    await client.waitFor((m) => m.type === 'ready');

    const first = await createMeeting(instance, t);
    await recordAndStop(client, first, {}); // no trace of its own: the hello's
    const second = await createMeeting(instance, t);
    await recordAndStop(client, second, { traceparent: fromStart });

    await vi.waitFor(() => expect(instance.ml!.requestTraces().filter((r) => r.request === 'drain')).toHaveLength(2), { timeout: 15_000 });
    const byTrace = (tp: string) => instance.ml!.requestTraces().filter((r) => r.trace.traceparent === tp).map((r) => r.request);
    expect(byTrace(fromHello)).toEqual(['start', 'audio', 'drain']);
    expect(byTrace(fromStart)).toEqual(['start', 'audio', 'drain']);
    expect(instance.ml!.requestTraces().find((r) => r.trace.traceparent === fromHello)!.trace.tracestate).toBe('vendor=1');

    await runSweep(instance.rt);
    await vi.waitFor(() => expect(finalized.map((m) => (m.data as any).meeting_id)).toEqual(expect.arrayContaining([first, second])), { timeout: 15_000 });
    const attributesOf = (meetingId: string) => finalized.find((m) => (m.data as any).meeting_id === meetingId)!.attributes;
    expect(attributesOf(first)).toMatchObject({ traceparent: fromHello, tracestate: 'vendor=1' });
    expect(attributesOf(second)).toMatchObject({ traceparent: fromStart });
    client.close();
  });

  it('should refuse a malformed traceparent as a bad message, and record without one', async () => {
    const t = await token(instance.config, 'untraced');
    const client = await TestClient.connect(instance.wsUrl, t);
    const meetingId = await createMeeting(instance, t);
    expect(await client.start(meetingId, { traceparent: 'not-a-trace' })).toMatchObject({ type: 'error', code: 'bad_message' });
    await recordAndStop(client, meetingId, {});
    client.close();
  });
});
