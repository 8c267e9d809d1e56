// The live client against the real stack: a recording goes on across a network drop and across
// a restart of the live service, the client holding every frame until it is durable, resending
// on resume and uploading what is still missing after the stop. The test then counts what the
// server stored through the REST API, and compares the stored bytes with what was pushed.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { OpenedDatabase } from '@mi/lib/db/open';
import {
  fileEnv,
  openTestDatabase,
  pcmFrame,
  startInstance,
  storedAudio,
  token,
  type Instance,
} from '../../test/live/helpers';
import { sleep, until } from '../../test/support/poll';
import { createRestClient, LiveConnection, LiveRecording, ok, type RestClient } from '../src/index';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy';

let database: OpenedDatabase;
let env: Record<string, string>;
let instance: Instance;
let proxy: TcpProxy;

beforeAll(async () => {
  database = await openTestDatabase();
  env = { ...fileEnv(), ML_SERVICE_URL: 'http://127.0.0.1:9' };
  instance = await startInstance(database, env, { instanceId: 'first' });
  proxy = await startTcpProxy(instance.url);
}, 60_000);

afterAll(async () => {
  await proxy?.close();
  await instance?.close();
  await database?.close();
});

interface Client {
  rest: RestClient;
  connection: LiveConnection;
  recording: LiveRecording;
  meetingId: string;
  /** Every frame pushed, by sequence number. */
  pushed: Buffer[];
}

async function recordingClient(name: string): Promise<Client> {
  const t = await token(instance.config, name);
  const clientId = randomUUID();
  const rest = createRestClient({ baseUrl: proxy.url, token: t, clientId });
  const meeting = ok(
    await rest.POST('/meetings', { body: { title: `live client ${name}`, source_type: 'recording' } }),
  );
  const connection = new LiveConnection({ url: proxy.wsUrl, token: t, clientId, WebSocket, backoff: () => 200 });
  const recording = new LiveRecording({ rest, connection, awaitFinalize: false });
  connection.connect();
  await until('connected', () => connection.ready);
  return { rest, connection, recording, meetingId: meeting.id, pushed: [] };
}

/** Pushes `n` frames, one every 10 ms (ten times real time), whatever the connection does. */
async function push(c: Client, n: number) {
  for (let i = 0; i < n; i++) {
    c.pushed.push(pcmFrame(c.recording.pushFrame(pcmFrame(c.pushed.length))));
    await sleep(10); // paces the pushes
  }
}

/** Stops, waits for the gap uploads, and checks through REST that every pushed frame is stored. */
async function stopAndVerify(c: Client) {
  c.recording.stop();
  const end = await c.recording.finished;
  expect(end.error).toBeNull();
  expect(end.phase).toBe('finalizing');
  const rec = ok(await c.rest.GET('/meetings/{id}/recording', { params: { path: { id: c.meetingId } } }));
  expect(rec).toMatchObject({
    audio_version: 1,
    frames_stored: c.pushed.length,
    bytes_stored: c.pushed.length * 3200,
    highest_contiguous_sequence: c.pushed.length - 1,
    missing_ranges: [],
  });
  const stored = await storedAudio(instance, c.meetingId, 1);
  expect(stored.bytes.equals(Buffer.concat(c.pushed))).toBe(true);
  expect(c.recording.snapshot.unacked).toBe(0);
  return end;
}

describe('live recording client', () => {
  it('should keep recording across a dropped connection: held frames resent on resume, a lost run uploaded as a gap with Content-Digest', async () => {
    const c = await recordingClient('drop');
    await c.recording.start(c.meetingId);
    await push(c, 30);
    expect(proxy.dropWebSockets()).toBe(1);
    await push(c, 30); // captured while away: held, not sent
    await until('resumed', () => c.recording.snapshot.resumes === 1 && c.recording.snapshot.phase === 'recording');
    expect(c.recording.snapshot.resent).toBeGreaterThanOrEqual(1);
    await push(c, 10);
    c.recording.loseFrames(5); // 70..74 never go out: the server reports them missing at the stop
    await push(c, 30);

    const end = await stopAndVerify(c);
    expect(end.missingRanges).toEqual([[70, 74]]);
    expect(end.gapUploads).toEqual([{ start: 70, end: 74, result: '201' }]);
    c.connection.close();
  });

  it('should keep recording across a restart of the live service: reconnect, resume on the new instance, nothing lost', async () => {
    const c = await recordingClient('restart');
    await c.recording.start(c.meetingId);
    await push(c, 40);
    // SIGTERM's path: buffers written, ReconnectAdvised, close 1012, leases released. Frames
    // keep coming meanwhile, as they would from a microphone.
    const closing = instance.close();
    while (c.connection.ready) await push(c, 1);
    await closing;
    await push(c, 20); // the service is down: reconnects are refused, frames are held
    const heldWhileDown = c.recording.snapshot.unacked;
    expect(heldWhileDown).toBeGreaterThanOrEqual(20);
    instance = await startInstance(database, env, { instanceId: 'second' });
    proxy.target = instance.url;
    await until(
      'resumed on the new instance',
      () => c.recording.snapshot.resumes >= 1 && c.recording.snapshot.phase === 'recording',
    );
    // Frames pushed while the service was down went out only on the resume.
    expect(c.recording.snapshot.resent).toBeGreaterThanOrEqual(20);
    await push(c, 20);

    const end = await stopAndVerify(c);
    expect(end.stopReason).toBe('user');
    c.connection.close();
  });

  it('should upload the frames captured while away when the take was stopped in its absence (disconnect grace ran out)', async () => {
    // A second instance with a 1 s grace; the proxy sends this test's client there.
    const graceful = await startInstance(
      database,
      { ...env, RECORDING_DISCONNECT_GRACE_SECONDS: '1' },
      { instanceId: 'grace' },
    );
    const previous = proxy.target;
    proxy.target = graceful.url;
    try {
      const c = await recordingClient('away');
      await c.recording.start(c.meetingId);
      await push(c, 20);
      await until('a first acknowledgement', () => c.recording.snapshot.highestContiguous >= 0);
      proxy.target = 'http://127.0.0.1:9'; // nothing listens: every reconnect fails
      proxy.dropWebSockets();
      await push(c, 30); // held: the server never sees them
      const direct = createRestClient({ baseUrl: graceful.url, token: await token(instance.config, 'away') });
      const state = async () =>
        ok(await direct.GET('/meetings/{id}/recording', { params: { path: { id: c.meetingId } } })).state;
      for (let i = 0; (await state()) !== 'stopped'; i++) {
        if (i > 100) throw new Error('the take was not stopped by the disconnect grace');
        await sleep(200);
      }
      proxy.target = graceful.url;
      const end = await c.recording.finished;
      expect(end.error).toBeNull();
      expect(end.stopReason).toBe('connection_closed');
      expect(end.gapUploads.length).toBeGreaterThanOrEqual(1);
      expect(end.gapUploads.every((g) => g.result === '201')).toBe(true);
      const rec = ok(await c.rest.GET('/meetings/{id}/recording', { params: { path: { id: c.meetingId } } }));
      expect(rec).toMatchObject({
        frames_stored: 50,
        bytes_stored: 50 * 3200,
        highest_contiguous_sequence: 49,
        missing_ranges: [],
      });
      c.connection.close();
    } finally {
      proxy.target = previous;
      await graceful.close();
    }
  });

  it('should replay by last_seq what happened while away, each event once, and report ResyncRequired when replay cannot cover the gap', async () => {
    const t = await token(instance.config, 'replay');
    // Another client's REST calls: their events are not echo-suppressed on our connection.
    const rest = createRestClient({ baseUrl: proxy.url, token: t, clientId: randomUUID() });
    const me = ok(await rest.GET('/me'));
    const seen: { type: string; seq?: number; event_id?: string; id?: string }[] = [];
    const connection = new LiveConnection({
      url: proxy.wsUrl,
      token: t,
      clientId: randomUUID(),
      WebSocket,
      backoff: () => 1_500,
      onMessage: (m) => void seen.push(m as never),
    });
    connection.connect();
    await until('connected', () => connection.ready);
    const first = ok(await rest.POST('/meetings', { body: { title: 'before', source_type: 'text' } }));
    await until('the first event', () => seen.some((m) => m.id === first.id));

    expect(proxy.dropWebSockets()).toBe(1);
    const second = ok(await rest.POST('/meetings', { body: { title: 'while away', source_type: 'text' } }));
    await until('the replayed event', () => seen.some((m) => m.id === second.id));
    const seqs = seen.map((m) => m.seq);
    expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a! - b!));
    expect(new Set(seen.map((m) => m.event_id)).size).toBe(seen.length);
    expect(connection.lastSeq).toBe(Math.max(...seqs.map(Number)));
    connection.close();

    // Retention pruned the first event: a client that last saw seq 0 must refetch over REST.
    await database.db.query('test.prune', 'DELETE FROM event_outbox WHERE user_id = $1 AND seq <= $2', [
      me.id,
      seen[0].seq,
    ]);
    const resyncs: number[] = [];
    const behind = new LiveConnection({
      url: proxy.wsUrl,
      token: t,
      clientId: randomUUID(),
      WebSocket,
      lastSeq: 0,
      onResync: (m) => void resyncs.push(m.oldest_seq),
    });
    behind.connect();
    await until(
      'ResyncRequired and the kept events',
      () => resyncs.length > 0 && behind.lastSeq === connection.lastSeq,
    );
    expect(resyncs).toEqual([seen[0].seq! + 1]);
    behind.close();
  });

  it('should not reconnect after the server refused the token (4401)', async () => {
    const connection = new LiveConnection({
      url: proxy.wsUrl,
      token: 'not-a-token',
      clientId: randomUUID(),
      WebSocket,
      backoff: () => 50,
    });
    connection.connect();
    await until('closed', () => connection.status.state === 'closed');
    expect(connection.status).toMatchObject({ state: 'closed', code: 4401 });
    // Proves no reconnect: waits out six of the 50 ms backoffs this test set (no event marks "did not retry").
    await sleep(300);
    expect(connection.status.state).toBe('closed');
  });
});
