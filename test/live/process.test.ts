// The Cloud Run entry (server.ts) as a real child process on the test's database: SIGTERM
// flushes, advises reconnecting and exits within 8 s; after SIGKILL, a resume on another instance
// still finds every acknowledged frame.
import { beforeAll, describe, expect, it } from 'vitest';
import { getRecording } from '@mi/lib/repositories/recordings';
import { TestClient, createMeeting, pcmFrame, range, storedAudio, token, useInstances, type Instance } from './helpers';
import { sleep } from '../support/poll';

const live = useInstances(1);
let other: Instance;
beforeAll(() => void ([other] = live.instances));

describe('server.ts', () => {
  it('should flush every buffer, advise reconnecting, close with 1012 and exit within 8 s on SIGTERM', async () => {
    const server = await live.startServer({ RECORDING_SEGMENT_TARGET_MS: '10000' });
    const t = await token(other.config, 'sigterm');
    const client = await TestClient.connect(server.wsUrl, t);
    const meetingId = await createMeeting(other, t);
    await client.start(meetingId);
    for (const seq of range(0, 14)) client.frame(seq); // far less than a segment: all in memory
    // Kept: the server is another process and says nothing about frames it holds unwritten.
    await sleep(300);
    expect(await storedAudio(other, meetingId, 1).then((s) => s.rows.length)).toBe(0);

    server.process.kill('SIGTERM');
    expect(await client.waitFor({ type: 'ReconnectAdvised' })).toEqual({
      type: 'ReconnectAdvised',
      reason: 'shutdown',
    });
    expect((await client.closed).code).toBe(1012);
    expect(await server.exited).toBe(0); // past the 8 s deadline the process exits 1 (EXIT_DEADLINE_MS)

    expect((await storedAudio(other, meetingId, 1)).sequences).toEqual(range(0, 14));
    expect(await getRecording(other.rt.db, meetingId, 1)).toMatchObject({ state: 'recording', owner_instance: null });

    // The client reconnects elsewhere and goes on.
    const back = await TestClient.connect(other.wsUrl, t);
    expect(await back.resume(meetingId, 1)).toMatchObject({ highest_contiguous_sequence: 14, missing_ranges: [] });
    back.frame(15);
    expect(await back.stop(meetingId)).toMatchObject({ highest_contiguous_sequence: 15 });
    back.close();
  });

  it('should lose no acknowledged frame when the instance is killed (SIGKILL) and the take is resumed on another', async () => {
    const server = await live.startServer({ RECORDING_SEGMENT_TARGET_MS: '500', RECORDING_PROGRESS_EVERY_FRAMES: '5' });
    const t = await token(other.config, 'sigkill');
    const client = await TestClient.connect(server.wsUrl, t);
    const meetingId = await createMeeting(other, t);
    await client.start(meetingId);
    for (const seq of range(0, 29)) client.frame(seq);
    const acked = (await client.acked(meetingId, 19)).highest_contiguous_sequence as number;
    for (const seq of range(30, 37)) client.frame(seq); // some of these die with the process
    await sleep(50); // lets some reach the process; which ones does not matter (the client resends unacked)
    server.process.kill('SIGKILL');
    await server.exited;

    // The client kept every frame not acknowledged; it resumes elsewhere and resends those.
    const latestAck = Math.max(
      acked,
      ...client.ofType('AudioStoredProgressEvent').map((m) => m.highest_contiguous_sequence),
    );
    const back = await TestClient.connect(other.wsUrl, t);
    const resumed = await back.resume(meetingId, 1);
    expect(resumed.type).toBe('RecordingResumed');
    expect(resumed.highest_contiguous_sequence).toBeGreaterThanOrEqual(latestAck);
    const missing = new Set<number>([
      ...resumed.missing_ranges.flatMap(([s, e]: [number, number]) => range(s, e)),
      ...range(resumed.highest_contiguous_sequence + 1, 37),
    ]);
    for (const seq of [...missing].sort((x, y) => x - y)) back.frame(seq);
    expect(await back.stop(meetingId)).toMatchObject({ highest_contiguous_sequence: 37, missing_ranges: [] });
    const stored = await storedAudio(other, meetingId, 1);
    expect(stored.bytes.equals(Buffer.concat(range(0, 37).map(pcmFrame)))).toBe(true);
    const { rows } = await other.rt.db.query<{ payload: { previous_owner: string; instance: string } }>(
      'test.events',
      `SELECT payload FROM recording_event_history WHERE meeting_id = $1 AND event_type = 'recording_resumed'`,
      [meetingId],
    );
    expect(rows[0].payload.previous_owner).toMatch(/^live-/);
    back.close();
  });
});
