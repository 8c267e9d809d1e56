// Limits and abuse on /ws: frames above LIVE_MAX_FRAME_BYTES are refused (error, nothing stored;
// far larger messages close 1009), a socket that never says hello is closed 4408, a user gets at
// most LIVE_MAX_CONNECTIONS_PER_USER connections across instances (4429), and a client that stops
// reading is cut off once LIVE_SEND_QUEUE_BYTES wait for it: the server's send buffer for it
// never grows past that bound, and other users go on receiving.
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import WebSocket from 'ws';
import { beforeAll, describe, expect, it } from 'vitest';
import { listManifest } from '@mi/lib/repositories/manifest';
import { appendEvent, appendEvents } from '@mi/lib/events/outbox';
import { changed, segmentEvent } from '@mi/lib/events/catalogue';
import {
  TestClient,
  createMeeting,
  frameMessage,
  pcmFrame,
  range,
  token,
  useInstances,
  type Instance,
} from '../live/helpers';
import { sleep, until } from '../support/poll';

const MAX_FRAME = 4096;
const HELLO_TIMEOUT_S = 0.5;
const MAX_CONNECTIONS = 3;
const SEND_QUEUE = 262_144;

const live = useInstances(2, {
  ML_SERVICE_URL: 'http://127.0.0.1:9',
  LIVE_MAX_FRAME_BYTES: String(MAX_FRAME),
  LIVE_HELLO_TIMEOUT_SECONDS: String(HELLO_TIMEOUT_S),
  LIVE_MAX_CONNECTIONS_PER_USER: String(MAX_CONNECTIONS),
  LIVE_SEND_QUEUE_BYTES: String(SEND_QUEUE),
});
let a: Instance;
let b: Instance;
beforeAll(() => void ([a, b] = live.instances));

const userIdOf = async (meetingId: string): Promise<string> =>
  (await a.rt.db.query<{ user_id: string }>('test.owner', 'SELECT user_id FROM meeting WHERE id = $1', [meetingId]))
    .rows[0].user_id;

describe('frame size', () => {
  it('should refuse a frame above LIVE_MAX_FRAME_BYTES with frame_too_large, store nothing of it and keep the connection', async () => {
    const t = await token(a.config, 'big-frames');
    const meetingId = await createMeeting(a, t);
    const client = await TestClient.connect(a.wsUrl, t);
    await client.start(meetingId, { encoding: 'webm_opus' }); // opus frames have no fixed size
    client.frame(0, Buffer.alloc(MAX_FRAME, 1)); // exactly the limit: taken
    const from = client.mark();
    client.frame(1, Buffer.alloc(MAX_FRAME + 1, 2));
    expect(await client.waitFor({ type: 'error' }, { timeoutMs: 5_000, from })).toMatchObject({
      code: 'frame_too_large',
      ref: 'audio',
    });
    client.frame(2, Buffer.alloc(16, 3));
    const stopped = await client.stop(meetingId);
    expect(stopped).toMatchObject({ highest_contiguous_sequence: 0, missing_ranges: [[1, 1]] });
    const rows = await listManifest(a.rt.db, meetingId, 1);
    expect(rows.map((r) => [r.start_sequence, r.end_sequence, r.byte_count])).toEqual([
      [0, 0, MAX_FRAME],
      [2, 2, 16],
    ]);
    expect(client.ws.readyState).toBe(WebSocket.OPEN);
    client.close();
  });

  it('should cut a connection with 1009 when a message is far above the bound (text or binary), before reading it whole', async () => {
    const t = await token(a.config, 'huge-messages');
    for (const huge of [
      frameMessage(0, Buffer.alloc(1024 * 1024 + 1)),
      JSON.stringify({ type: 'StopRecordingCommand', meeting_id: 'x'.repeat(1024 * 1024) }),
    ]) {
      const client = await TestClient.connect(a.wsUrl, t);
      client.ws.send(huge);
      expect((await client.closed).code).toBe(1009);
    }
    // The instance is unharmed.
    (await TestClient.connect(a.wsUrl, t)).close();
  });
});

describe('hello', () => {
  it('should close a socket that never says hello with 4408 after LIVE_HELLO_TIMEOUT_SECONDS, and one that sends only audio with 4401', async () => {
    const silent = await TestClient.open(a.wsUrl);
    const t0 = Date.now();
    expect((await silent.closed).code).toBe(4408);
    const waited = Date.now() - t0;
    expect(waited).toBeGreaterThanOrEqual(HELLO_TIMEOUT_S * 1000 - 50);

    const streamer = await TestClient.open(a.wsUrl);
    streamer.ws.send(frameMessage(0, pcmFrame(0)));
    expect((await streamer.closed).code).toBe(4401);
  });
});

describe('frames that cannot be stored as they are', () => {
  it('should refuse a pcm_s16le frame that is not exactly 100 ms of samples, and an empty opus frame, with bad_frame', async () => {
    const t = await token(a.config, 'odd-frames');
    const meetingId = await createMeeting(a, t);
    const client = await TestClient.connect(a.wsUrl, t);
    await client.start(meetingId); // pcm_s16le at 16 kHz: 3,200 bytes a frame
    client.frame(0);
    for (const size of [1, 3199, 3201]) {
      const from = client.mark();
      client.frame(1, Buffer.alloc(size, 1));
      expect(await client.waitFor({ type: 'error' }, { timeoutMs: 5_000, from })).toMatchObject({
        code: 'bad_frame',
        ref: 'audio',
      });
      await sleep(1_100); // waits out the one-error-per-code-a-second throttle (a timer never fires early)
    }
    client.frame(1);
    expect(await client.stop(meetingId)).toMatchObject({ highest_contiguous_sequence: 1, missing_ranges: [] });
    const rows = await listManifest(a.rt.db, meetingId, 1);
    expect(rows.reduce((n, r) => n + r.byte_count, 0)).toBe(2 * 3200);

    const opusMeeting = await createMeeting(a, t);
    await client.start(opusMeeting, { encoding: 'webm_opus' });
    const from = client.mark();
    client.frame(0, Buffer.alloc(0));
    expect(await client.waitFor({ type: 'error' }, { timeoutMs: 5_000, from })).toMatchObject({
      code: 'bad_frame',
      ref: 'audio',
    });
    await client.stop(opusMeeting);
    client.close();
  });

  it('should refuse a frame that would open a 65th missing range with too_many_gaps, and take it once the holes are filled', async () => {
    const t = await token(a.config, 'sparse');
    const meetingId = await createMeeting(a, t);
    const client = await TestClient.connect(a.wsUrl, t);
    await client.start(meetingId);
    // Every other frame: 1, 3, …, 127 leave 64 holes (0, 2, …, 126).
    for (let seq = 1; seq <= 127; seq += 2) client.frame(seq);
    const from = client.mark();
    client.frame(129);
    expect(await client.waitFor({ type: 'error' }, { timeoutMs: 5_000, from })).toMatchObject({
      code: 'too_many_gaps',
      ref: 'audio',
    });
    client.frame(128); // no new hole: taken
    for (let seq = 0; seq <= 126; seq += 2) client.frame(seq);
    client.frame(129);
    expect(await client.stop(meetingId)).toMatchObject({ highest_contiguous_sequence: 129, missing_ranges: [] });
    client.close();
  });
  it('should refuse a frame inside a hole that would split it into a 65th missing range, and take it once it no longer splits one', async () => {
    const t = await token(a.config, 'splitting');
    const meetingId = await createMeeting(a, t);
    const client = await TestClient.connect(a.wsUrl, t);
    await client.start(meetingId);
    // Frames 0, 4, …, 256 leave 64 holes of three frames each (1-3, 5-7, …, 253-255).
    for (let seq = 0; seq <= 256; seq += 4) client.frame(seq);
    let from = client.mark();
    client.frame(2); // the middle of 1-3: would leave 1-1 and 3-3, 65 holes
    expect(await client.waitFor({ type: 'error' }, { timeoutMs: 5_000, from })).toMatchObject({
      code: 'too_many_gaps',
      ref: 'audio',
    });
    client.frame(1); // an edge: 2-3 remains, still 64 holes
    client.frame(2); // now an edge too: taken
    await sleep(1_100); // waits out the one-error-per-code-a-second throttle (a timer never fires early)
    from = client.mark();
    client.frame(6); // the middle of 5-7 is refused the same way
    expect(await client.waitFor({ type: 'error' }, { timeoutMs: 5_000, from })).toMatchObject({
      code: 'too_many_gaps',
      ref: 'audio',
    });
    for (let seq = 3; seq <= 255; seq++) if (seq % 4 !== 0) client.frame(seq);
    const stopped = await client.stop(meetingId);
    expect(stopped).toMatchObject({ highest_contiguous_sequence: 256, missing_ranges: [] });
    const rows = await listManifest(a.rt.db, meetingId, 1);
    const covered = rows.flatMap((r) => range(r.start_sequence, r.end_sequence));
    expect(covered.length).toBe(new Set(covered).size); // the refused frames were not stored before being sent again
    expect(covered.sort((x, y) => x - y)).toEqual(range(0, 256));
    expect(client.ofType('error').filter((m) => m.code === 'too_many_gaps')).toHaveLength(2);
    client.close();
  });
});

describe('connections per user', () => {
  it('should refuse the connection past LIVE_MAX_CONNECTIONS_PER_USER counted across instances with 4429, and admit one again after a close', async () => {
    const t = await token(a.config, 'tab-hoarder');
    const open = [
      await TestClient.connect(a.wsUrl, t),
      await TestClient.connect(a.wsUrl, t),
      await TestClient.connect(b.wsUrl, t),
    ];
    for (const wsUrl of [a.wsUrl, b.wsUrl]) {
      const extra = await TestClient.open(wsUrl);
      extra.send({ type: 'hello', token: t, client_id: randomUUID() });
      expect((await extra.closed).code).toBe(4429);
      expect(extra.ofType('ready')).toEqual([]);
    }
    // Another user is not affected by this one's tabs.
    (await TestClient.connect(b.wsUrl, await token(a.config, 'someone-else'))).close();

    open.pop()!.close();
    // The closed tab's presence goes away (asynchronously, in Firestore); then a new one is admitted.
    let again: TestClient | null = null;
    for (const deadline = Date.now() + 10_000; !again && Date.now() < deadline; ) {
      const attempt = await TestClient.open(b.wsUrl);
      attempt.send({ type: 'hello', token: t, client_id: randomUUID() });
      const outcome = await Promise.race([
        attempt.waitFor({ type: 'ready' }, { timeoutMs: 10_000 }).then(
          () => 'ready',
          () => 'no answer',
        ),
        attempt.closed.then((c) => c.code),
      ]);
      if (outcome === 'ready') again = attempt;
      else await sleep(250);
    }
    expect(again?.ofType('ready')).toHaveLength(1);
    for (const c of [...open, again!]) c.close();
  });
});

describe('slow readers', () => {
  it('should never buffer more than LIVE_SEND_QUEUE_BYTES for a client that stops reading, cut it off, and keep serving others', async () => {
    // The server side of every socket of instance a, to watch how much waits to be sent.
    const serverSockets: Socket[] = [];
    const capture = (_req: unknown, socket: Socket) => void serverSockets.push(socket);
    a.server.prependListener('upgrade', capture);
    const slowToken = await token(a.config, 'slow-reader');
    const slow = await TestClient.connect(a.wsUrl, slowToken);
    const slowSocket = serverSockets.at(-1)!;
    const fastToken = await token(a.config, 'fast-reader');
    const fast = await TestClient.connect(a.wsUrl, fastToken);
    a.server.removeListener('upgrade', capture);

    const slowUser = await userIdOf(await createMeeting(a, slowToken));
    const fastMeeting = await createMeeting(a, fastToken);
    const fastUser = await userIdOf(fastMeeting);
    (slow.ws as unknown as { _socket: Socket })._socket.pause();

    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, slowSocket.writableLength)), 2);
    try {
      // 16 MB for the slow reader (far beyond the kernel's socket buffers) in events well under the
      // bound, and a little for the other user.
      const big = segmentEvent(randomUUID(), randomUUID(), { text: 'x'.repeat(40_000) });
      for (let round = 0; round < 6; round++) {
        const [slowEvents, fastEvent] = await a.rt.db.withTransaction(
          async (tx) =>
            [
              await appendEvents(
                tx,
                slowUser,
                range(1, 67).map(() => big),
              ),
              await appendEvent(tx, fastUser, changed('meeting', 'updated', fastMeeting, fastMeeting)),
            ] as const,
        );
        await a.rt.events.publish([...slowEvents, fastEvent]);
      }
      const closed = await Promise.race([
        slowSocket.closed ? Promise.resolve(true) : new Promise((r) => slowSocket.once('close', () => r(true))),
        sleep(20_000).then(() => false),
      ]);
      expect(closed).toBe(true);
    } finally {
      clearInterval(sampler);
    }
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(SEND_QUEUE + 1024);

    // Reading again shows how it ended: a 4413 close, or cut off when it could not even take the close frame.
    (slow.ws as unknown as { _socket: Socket })._socket.resume();
    expect([4413, 1006]).toContain((await slow.closed).code);
    expect(slow.ofType('TranscriptSegmentEvent').length).toBeLessThan(6 * 67);
    await until(
      'six updates on the fast client',
      () => fast.ofType('EntityChanged').filter((m) => m.action === 'updated').length >= 6,
    );
    expect(fast.ws.readyState).toBe(WebSocket.OPEN);
    fast.close();
  }, 60_000);
});
