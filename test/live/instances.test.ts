// Two live instances on one database and one set of emulators, as two Cloud Run instances:
// events caused on one reach the user's connections on the other; a take resumed on the other
// instance moves there while the old owner writes what it held and lets go; and the disconnect
// grace: when the user's last connection anywhere closes, a take stops with reason
// connection_closed after RECORDING_DISCONNECT_GRACE_SECONDS (0: at once, A here; 2 s on B),
// with what the closed connection delivered flushed; a reconnect or a resume cancels the stop.
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { getRecording } from '@mi/lib/repositories/recordings';
import { TestClient, createMeeting, pcmFrame, range, storedAudio, token, useInstances, type Instance } from './helpers';
import { sleep } from '../support/poll';

const GRACE_SECONDS = 2;
const live = useInstances([
  { instanceId: 'instance-a', env: { RECORDING_DISCONNECT_GRACE_SECONDS: '0' } },
  { instanceId: 'instance-b', env: { RECORDING_DISCONNECT_GRACE_SECONDS: String(GRACE_SECONDS) } },
]);
let a: Instance;
let b: Instance;
beforeAll(() => void ([a, b] = live.instances));

function waitForState(instance: Instance, meetingId: string, state: string, timeoutMs = 15_000) {
  return vi.waitFor(
    async () => {
      const rec = await getRecording(instance.rt.db, meetingId, 1);
      expect(rec?.state).toBe(state);
      return rec!;
    },
    { timeout: timeoutMs, interval: 100 },
  );
}

/** Waits until the instance's take has received frame `seq` (frames are handled asynchronously). */
function waitForReceived(instance: Instance, seq: number) {
  return vi.waitFor(
    () => {
      const received = [...instance.live.recorders.values()].map(
        (r) => (r as unknown as { received: { has(n: number): boolean } }).received,
      );
      expect(received.some((set) => set.has(seq))).toBe(true);
    },
    { timeout: 15_000 },
  );
}

async function waitForEvent(instance: Instance, meetingId: string, type: string) {
  await vi.waitFor(async () => expect(await eventTypes(instance, meetingId)).toContain(type), { timeout: 15_000 });
}

async function eventTypes(instance: Instance, meetingId: string): Promise<string[]> {
  const { rows } = await instance.rt.db.query<{ event_type: string }>(
    'test.events',
    'SELECT event_type FROM recording_event_history WHERE meeting_id = $1 ORDER BY seq',
    [meetingId],
  );
  return rows.map((r) => r.event_type);
}

describe('two instances', () => {
  it('should deliver to a client on B the events of a recording and a REST change made through A', async () => {
    const t = await token(a.config, 'fan-out');
    const onA = await TestClient.connect(a.wsUrl, t);
    const onB = await TestClient.connect(b.wsUrl, t);
    const meetingId = await createMeeting(a, t);
    await onB.waitFor({ type: 'EntityChanged', entity: 'meeting', id: meetingId });

    await onA.start(meetingId);
    for (const seq of range(0, 49)) onA.frame(seq);
    const progress = await onB.acked(meetingId, 49);
    expect(progress).toMatchObject({ type: 'AudioStoredProgressEvent', audio_version: 1, frames_stored: 50 });
    await onA.stop(meetingId);
    await onB.waitFor({ type: 'EntityChanged', entity: 'recording', action: 'updated' });

    // Same events, same order, each once, on both instances; A skips the echoes of its own start command.
    // Polled until A has caught up with B (a duplicate or a gap never goes away: the poll then fails).
    await vi.waitFor(
      () => {
        const seqsA = onA.messages.filter((m) => m.seq !== undefined).map((m) => m.seq);
        const seqsB = onB.messages.filter((m) => m.seq !== undefined).map((m) => m.seq);
        expect(seqsB).toEqual(range(seqsB[0], seqsB.at(-1)!));
        const echoes = onB.messages
          .filter((m) => m.type === 'EntityChanged' && m.action === 'created' && m.entity !== 'meeting')
          .map((m) => m.seq);
        expect(echoes).toHaveLength(2);
        expect(seqsA).toEqual(seqsB.filter((s) => !echoes.includes(s)));
      },
      { timeout: 10_000, interval: 50 },
    );
    onA.close();
    onB.close();
  });

  it('should move a take resumed on B while A still holds unwritten frames; A writes them and lets go; nothing is lost', async () => {
    const t = await token(a.config, 'mover');
    const onA = await TestClient.connect(a.wsUrl, t);
    const meetingId = await createMeeting(a, t);
    await onA.start(meetingId);
    for (const seq of range(0, 29)) onA.frame(seq);
    await onA.acked(meetingId, 29);
    for (const seq of range(30, 34)) onA.frame(seq); // half a segment: still in A's buffer
    await waitForReceived(a, 34);

    // A second tab resumes on B while the first tab is still connected to A.
    const onB = await TestClient.connect(b.wsUrl, t);
    const resumed = await onB.resume(meetingId, 1);
    expect(resumed).toMatchObject({ type: 'RecordingResumed', audio_version: 1 });
    expect(resumed.highest_contiguous_sequence).toBeGreaterThanOrEqual(29);
    expect((await getRecording(b.rt.db, meetingId, 1))?.owner_instance).toBe('instance-b');

    // A learns at its next heartbeat, writes 30..34 and tells its connection.
    expect(await onA.waitFor({ type: 'RecordingReleased' })).toMatchObject({
      meeting_id: meetingId,
      reason: 'resumed_elsewhere',
    });
    expect(a.live.recorders.size).toBe(0);

    // The client resends everything after what B reported, as a client must; overlaps are sorted out.
    for (const seq of range(resumed.highest_contiguous_sequence + 1, 44)) onB.frame(seq);
    const stopped = await onB.stop(meetingId);
    expect(stopped).toMatchObject({ highest_contiguous_sequence: 44, missing_ranges: [] });
    const stored = await storedAudio(b, meetingId, 1);
    expect(stored.sequences).toEqual(range(0, 44));
    expect(stored.bytes.equals(Buffer.concat(range(0, 44).map(pcmFrame)))).toBe(true);
    onA.close();
    onB.close();
  });
});

describe('account erasure', () => {
  it("should close the user's connections on every instance with 4410 after DELETE /me, and no one else's", async () => {
    const t = await token(a.config, 'erased-live');
    const bystander = await TestClient.connect(b.wsUrl, await token(a.config, 'bystander-live'));
    const onA = await TestClient.connect(a.wsUrl, t);
    const onB = await TestClient.connect(b.wsUrl, t);
    const erased = await fetch(`${a.url}/me`, { method: 'DELETE', headers: { authorization: `Bearer ${t}` } });
    expect(erased.status).toBe(204);
    const [closedA, closedB] = await Promise.all([onA.closed, onB.closed]);
    expect(closedA.code).toBe(4410);
    expect(closedB.code).toBe(4410);
    expect(bystander.ws.readyState).toBe(bystander.ws.OPEN);
    bystander.close();
  });
});

describe('disconnect grace', () => {
  it('should stop at once with reason connection_closed when the grace is 0, with the frames delivered stored', async () => {
    const t = await token(a.config, 'zero');
    const client = await TestClient.connect(a.wsUrl, t);
    const meetingId = await createMeeting(a, t);
    await client.start(meetingId);
    for (const seq of range(0, 6)) client.frame(seq); // less than a segment: written because the connection closed
    await waitForReceived(a, 6);
    client.close();
    const rec = await waitForState(a, meetingId, 'stopped', 10_000);
    expect(rec.stop_reason).toBe('connection_closed');
    expect((await storedAudio(a, meetingId, 1)).sequences).toEqual(range(0, 6));
    expect(await eventTypes(a, meetingId)).toEqual(
      expect.arrayContaining(['connection_closed', 'disconnect_grace_started', 'stop_requested', 'recording_stopped']),
    );
  });

  it("should wait the grace period before stopping, flushing the closed connection's frames promptly", async () => {
    const t = await token(b.config, 'waits');
    const client = await TestClient.connect(b.wsUrl, t);
    const meetingId = await createMeeting(b, t);
    await client.start(meetingId);
    for (const seq of range(0, 3)) client.frame(seq);
    await waitForReceived(b, 3);
    client.close();
    const closedAt = Date.now();
    // The closed connection's frames are flushed well inside the grace, still recording meanwhile.
    await vi.waitFor(async () => expect((await storedAudio(b, meetingId, 1)).sequences).toEqual(range(0, 3)), {
      timeout: 15_000,
    });
    expect((await getRecording(b.rt.db, meetingId, 1))?.state).toBe('recording');
    await waitForState(b, meetingId, 'stopped');
    expect(Date.now() - closedAt).toBeGreaterThanOrEqual(GRACE_SECONDS * 1000 - 100);
    expect((await getRecording(b.rt.db, meetingId, 1))?.stop_reason).toBe('connection_closed');
  });

  it('should cancel the pending stop when the client resumes inside the grace period', async () => {
    const t = await token(b.config, 'resumes');
    const client = await TestClient.connect(b.wsUrl, t);
    const meetingId = await createMeeting(b, t);
    await client.start(meetingId);
    for (const seq of range(0, 9)) client.frame(seq);
    await client.acked(meetingId, 9);
    client.close();
    await waitForEvent(b, meetingId, 'disconnect_grace_started');

    const back = await TestClient.connect(b.wsUrl, t);
    const resumed = await back.resume(meetingId, 1);
    expect(resumed).toMatchObject({
      type: 'RecordingResumed',
      audio_version: 1,
      highest_contiguous_sequence: 9,
      missing_ranges: [],
    });
    await waitForEvent(b, meetingId, 'disconnect_grace_cancelled');
    // Outlives the cancelled grace timer (this file's GRACE_SECONDS): a stop it made would show now.
    await sleep(GRACE_SECONDS * 1000 + 500);
    expect((await getRecording(b.rt.db, meetingId, 1))?.state).toBe('recording');

    for (const seq of range(10, 14)) back.frame(seq);
    expect(await back.stop(meetingId)).toMatchObject({ reason: 'user', highest_contiguous_sequence: 14 });
    back.close();
  });

  it('should cancel the pending stop when the user reconnects on another instance', async () => {
    const t = await token(b.config, 'elsewhere');
    const client = await TestClient.connect(b.wsUrl, t);
    const meetingId = await createMeeting(b, t);
    await client.start(meetingId);
    client.frame(0);
    client.close();
    await waitForEvent(b, meetingId, 'disconnect_grace_started');
    const other = await TestClient.connect(a.wsUrl, t); // a tab on the other instance
    // Outlives the grace timer (this file's GRACE_SECONDS): a stop it made would show now.
    await sleep(GRACE_SECONDS * 1000 + 500);
    expect((await getRecording(b.rt.db, meetingId, 1))?.state).toBe('recording');

    // Its last connection closing (on the other instance) starts the grace again.
    other.close();
    const rec = await waitForState(b, meetingId, 'stopped');
    expect(rec.stop_reason).toBe('connection_closed');
  });
});
