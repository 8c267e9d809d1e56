// The connection protocol: hello (4401, 4408, 4429), ready, event delivery with last_seq replay
// in order without duplicates, echo suppression by X-Client-Id, the send queue bound and the
// connection lifetime (ReconnectAdvised, 1012).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { OpenedDatabase } from '@mi/lib/db/open';
import { appendEvent, latestSeq, type StoredEvent } from '@mi/lib/events/outbox';
import { segmentEvent } from '@mi/lib/events/catalogue';
import {
  TestClient,
  createMeeting,
  fileEnv,
  openTestDatabase,
  range,
  startInstance,
  storedAudio,
  token,
  type Instance,
} from './helpers';
import { sleep } from '../support/poll';

let database: OpenedDatabase;
let core: Instance;
let env: Record<string, string>;

beforeAll(async () => {
  database = await openTestDatabase();
  env = { ...fileEnv(), LIVE_HELLO_TIMEOUT_SECONDS: '0.5', LIVE_MAX_CONNECTIONS_PER_USER: '3' };
  core = await startInstance(database, env);
});

afterAll(async () => {
  await core?.close();
  await database?.close();
});

async function patchMeeting(
  instance: Instance,
  userToken: string,
  meetingId: string,
  title: string,
  clientId?: string,
) {
  const res = await fetch(`${instance.url}/meetings/${meetingId}`, {
    method: 'PATCH',
    headers: {
      authorization: `Bearer ${userToken}`,
      'content-type': 'application/json',
      ...(clientId ? { 'x-client-id': clientId } : {}),
    },
    body: JSON.stringify({ title }),
  });
  expect(res.status).toBe(200);
}

/** The latest seq of the meeting's owner: the seq of the event a request just committed. */
async function latestSeqOfOwner(meetingId: string): Promise<number> {
  const { rows } = await core.rt.db.query<{ user_id: string }>(
    'test.owner',
    'SELECT user_id FROM meeting WHERE id = $1',
    [meetingId],
  );
  return latestSeq(core.rt.db, rows[0].user_id);
}

const entityEvents = (c: TestClient, meetingId: string) =>
  c.messages.filter((m) => m.type === 'EntityChanged' && m.meeting_id === meetingId);

describe('hello', () => {
  it('should answer a valid hello with ready and a connection id', async () => {
    const client = await TestClient.connect(core.wsUrl, await token(core.config, 'hello-ok'));
    const ready = client.messages[0];
    expect(ready).toEqual({ type: 'ready', connection_id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    client.close();
  });

  it('should close with 4401 for a bad token, a service token or a first message that is not hello', async () => {
    for (const first of [
      { type: 'hello', token: 'not-a-jwt', client_id: randomUUID() },
      { type: 'hello', token: core.config.SERVICE_AUTH_TOKEN, client_id: randomUUID() },
      {
        type: 'hello',
        token: await token({ ...core.config, IDENTITY_SECRET_KEY: 'another-secret-key-0123456789abc' }, 'x'),
        client_id: randomUUID(),
      },
      { type: 'StartRecordingCommand', meeting_id: randomUUID(), encoding: 'pcm_s16le' },
    ]) {
      const client = await TestClient.open(core.wsUrl);
      client.send(first);
      expect((await client.closed).code).toBe(4401);
      expect(client.ofType('ready')).toEqual([]);
    }
  });

  it('should close with 4400 for a hello whose client_id is not a uuid', async () => {
    const client = await TestClient.open(core.wsUrl);
    client.send({ type: 'hello', token: await token(core.config, 'x'), client_id: 'nope' });
    expect((await client.closed).code).toBe(4400);
  });

  it('should close with 4408 when no hello comes within LIVE_HELLO_TIMEOUT_SECONDS', async () => {
    const client = await TestClient.open(core.wsUrl);
    const t0 = Date.now();
    expect((await client.closed).code).toBe(4408);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(400);
  });

  it('should refuse more than LIVE_MAX_CONNECTIONS_PER_USER connections with 4429', async () => {
    const t = await token(core.config, 'many-tabs');
    const tabs = [
      await TestClient.connect(core.wsUrl, t),
      await TestClient.connect(core.wsUrl, t),
      await TestClient.connect(core.wsUrl, t),
    ];
    const extra = await TestClient.open(core.wsUrl);
    extra.send({ type: 'hello', token: t, client_id: randomUUID() });
    expect((await extra.closed).code).toBe(4429);
    for (const tab of tabs) tab.close();
  });
});

describe('events', () => {
  it("should deliver the user's events (and no one else's) with event_id, seq and occurred_at", async () => {
    const carol = await token(core.config, 'carol');
    const dave = await token(core.config, 'dave');
    const carolClient = await TestClient.connect(core.wsUrl, carol);
    const daveClient = await TestClient.connect(core.wsUrl, dave);
    const meetingId = await createMeeting(core, carol);
    await patchMeeting(core, carol, meetingId, 'renamed');
    const updated = await carolClient.waitFor({ type: 'EntityChanged', action: 'updated', id: meetingId });
    expect(updated).toMatchObject({
      entity: 'meeting',
      meeting_id: meetingId,
      event_id: expect.any(String),
      seq: expect.any(Number),
      occurred_at: expect.any(String),
    });
    // Dave's own later event comes after anything misrouted to him on the same socket.
    const daveMeeting = await createMeeting(core, dave);
    await daveClient.waitFor({ type: 'EntityChanged', id: daveMeeting });
    expect(daveClient.messages.filter((m) => m.type !== 'ready' && m.meeting_id !== daveMeeting)).toEqual([]);
    carolClient.close();
    daveClient.close();
  });

  it('should skip the connection whose client_id the request named in X-Client-Id, and only that one', async () => {
    const erin = await token(core.config, 'erin');
    const origin = await TestClient.connect(core.wsUrl, erin);
    const other = await TestClient.connect(core.wsUrl, erin);
    const meetingId = await createMeeting(core, erin);
    // Each event is waited for by its seq: a wait that matched "an update" once returned the
    // first one already here instead of the one meant.
    await patchMeeting(core, erin, meetingId, 'from origin', origin.clientId);
    const fromOrigin = await latestSeqOfOwner(meetingId);
    await patchMeeting(core, erin, meetingId, 'from elsewhere');
    const fromElsewhere = await latestSeqOfOwner(meetingId);
    expect(await other.waitFor({ seq: fromOrigin })).toMatchObject({ action: 'updated', id: meetingId });
    expect(await other.waitFor({ seq: fromElsewhere })).toMatchObject({ action: 'updated', id: meetingId });
    // Delivery is in seq order: once the later event is here, the skipped earlier one cannot follow.
    await origin.waitFor({ seq: fromElsewhere });
    expect(origin.messages.filter((m) => m.seq === fromOrigin)).toEqual([]);
    expect(entityEvents(origin, meetingId).filter((e) => e.action === 'updated')).toHaveLength(1);
    origin.close();
    other.close();
  });

  it('should replay the events after last_seq in order, then continue live, without duplicates', async () => {
    const frank = await token(core.config, 'frank');
    const first = await TestClient.connect(core.wsUrl, frank);
    const meetingId = await createMeeting(core, frank);
    const created = await first.waitFor({ type: 'EntityChanged', id: meetingId });
    first.close();
    await first.closed;

    for (let i = 0; i < 5; i++) await patchMeeting(core, frank, meetingId, `offline ${i}`);
    const back = await TestClient.connect(core.wsUrl, frank, { lastSeq: created.seq });
    for (let i = 0; i < 3; i++) await patchMeeting(core, frank, meetingId, `live ${i}`);
    // One more live event: a duplicate of an earlier one would have come before it.
    await patchMeeting(core, frank, meetingId, 'last');
    await back.waitFor({ seq: created.seq + 9 });
    const seqs = back.messages.filter((m) => m.seq !== undefined).map((m) => m.seq);
    expect(seqs).toEqual(range(created.seq + 1, created.seq + 9));
    back.close();
  });

  it('should fill a gap from the outbox when an event arrives before the one it follows', async () => {
    const gina = await token(core.config, 'gina');
    const client = await TestClient.connect(core.wsUrl, gina);
    const meetingId = await createMeeting(core, gina);
    const created = await client.waitFor({ type: 'EntityChanged', id: meetingId });
    const userId: string = (
      await core.rt.db.query<{ user_id: string }>('test.user', 'SELECT user_id FROM meeting WHERE id = $1', [meetingId])
    ).rows[0].user_id;
    const body = {
      type: 'EntityChanged',
      entity: 'meeting',
      action: 'updated',
      id: meetingId,
      meeting_id: meetingId,
    } as const;
    const [a, b]: StoredEvent[] = await core.rt.db.withTransaction(async (tx) => [
      await appendEvent(tx, userId, body),
      await appendEvent(tx, userId, body),
    ]);
    await core.rt.events.publish([b]); // the later one first; the earlier one never published
    await client.waitFor({ seq: b.seq });
    await core.rt.events.publish([a]); // and now its late copy: a duplicate
    // A later event published after the copy: the copy, if delivered, would have come first.
    const [c] = await core.rt.db.withTransaction(async (tx) => [await appendEvent(tx, userId, body)]);
    await core.rt.events.publish([c]);
    await client.waitFor({ seq: c.seq });
    const seqs = client.messages.filter((m) => m.seq !== undefined).map((m) => m.seq);
    expect(seqs).toEqual([created.seq, a.seq, b.seq, c.seq]);
    client.close();
  });

  it('should close a client that stops reading once its send queue exceeds LIVE_SEND_QUEUE_BYTES', async () => {
    const logs: string[] = [];
    const slow = await startInstance(
      database,
      { ...env, LIVE_SEND_QUEUE_BYTES: '65536', LOG_LEVEL: 'warn' },
      { logDestination: { write: (line) => void logs.push(line) } },
    );
    try {
      const hank = await token(slow.config, 'hank');
      const client = await TestClient.connect(slow.wsUrl, hank);
      const meetingId = await createMeeting(slow, hank);
      (client.ws as unknown as { _socket: { pause(): void } })._socket.pause();
      const userId: string = (
        await slow.rt.db.query<{ user_id: string }>('test.user', 'SELECT user_id FROM meeting WHERE id = $1', [
          meetingId,
        ])
      ).rows[0].user_id;
      const big = segmentEvent(meetingId, randomUUID(), { text: 'x'.repeat(200_000) });
      const events = await slow.rt.db.withTransaction(async (tx) =>
        Promise.all(range(1, 60).map(() => appendEvent(tx, userId, big))),
      );
      await slow.rt.events.publish(events.sort((x, y) => x.seq - y.seq));
      // The server gives up on it (its log says so); reading again shows how it ended.
      await vi.waitFor(() => expect(logs.join('')).toContain('closing a client that does not read'), {
        timeout: 20_000,
      });
      (client.ws as unknown as { _socket: { resume(): void } })._socket.resume();
      const { code } = await client.closed;
      expect([4413, 1006]).toContain(code);
      expect(client.ofType('TranscriptSegmentEvent').length).toBeLessThan(60);
    } finally {
      await slow.close();
    }
  });
});

describe('connection lifetime', () => {
  it('should flush, send ReconnectAdvised and close with 1012 at LIVE_CONNECTION_LIFETIME_SECONDS; the take goes on', async () => {
    const short = await startInstance(database, {
      ...env,
      LIVE_CONNECTION_LIFETIME_SECONDS: '3',
      RECORDING_DISCONNECT_GRACE_SECONDS: '0',
    });
    try {
      const ivan = await token(short.config, 'ivan');
      const client = await TestClient.connect(short.wsUrl, ivan);
      const meetingId = await createMeeting(short, ivan);
      await client.start(meetingId);
      for (const seq of range(0, 4)) client.frame(seq); // fewer than one segment: only the lifetime flush writes them
      const advised = await client.waitFor({ type: 'ReconnectAdvised' }, { timeoutMs: 5000 });
      expect(advised).toEqual({ type: 'ReconnectAdvised', reason: 'lifetime' });
      expect((await client.closed).code).toBe(1012);
      expect((await storedAudio(short, meetingId, 1)).sequences).toEqual(range(0, 4));

      // Grace 0 would stop a take whose client left; a client told to reconnect gets to come back.
      // Proves a stop does NOT happen; nothing marks "grace timer skipped", so this waits past a 0 s grace.
      await sleep(300);
      const again = await TestClient.connect(short.wsUrl, ivan);
      expect(await again.resume(meetingId, 1)).toMatchObject({
        type: 'RecordingResumed',
        highest_contiguous_sequence: 4,
        missing_ranges: [],
      });
      again.frame(5);
      expect(await again.stop(meetingId)).toMatchObject({ reason: 'user', highest_contiguous_sequence: 5 });
      again.close();
    } finally {
      await short.close();
    }
  });
});
