// DELETE /me while a take is live on a real instance: the erasure stops the take (its row), the
// instance lets go of it (RecordingReleased not_recording) and deletes what it was still writing,
// and afterwards no row of the user (any table, found through information_schema) and no object
// under the meeting's prefixes remain.
import { describe, expect, it, vi } from 'vitest';
import { meetingObjectPrefixes } from '@mi/lib/objects/meeting-objects';
import { runSweep } from '../../functions/sweep';
import { rowsNaming } from '../support/rows-naming';
import { TestClient, createMeeting, token, useInstance } from './helpers';
import { sleep } from '../support/poll';

// A long settle time opens the window in which a stop is under way when the erasure arrives.
const ctx = useInstance({ RECORDING_STOP_SETTLE_MS: '3000' });

describe('DELETE /me during a live take', () => {
  it('should stop the take first and leave no row and no object behind', async () => {
    const { instance } = ctx;
    const user = await token(instance.config, 'live-erase');
    const me = await fetch(`${instance.url}/me`, { headers: { authorization: `Bearer ${user}` } });
    const userId = ((await me.json()) as { id: string }).id;
    const meetingId = await createMeeting(instance, user);
    const client = await TestClient.connect(instance.wsUrl, user);
    const started = await client.start(meetingId);
    for (let seq = 0; seq < 30; seq++) client.frame(seq);
    await client.acked(meetingId, 29);
    const list = () =>
      Promise.all(meetingObjectPrefixes(meetingId).map((p) => instance.rt.store.list(p))).then((l) =>
        l.flat().map((o) => o.name),
      );
    expect((await list()).length).toBeGreaterThan(0);

    // Frames keep coming while the erasure arrives.
    let seq = 30;
    let sending = true;
    const sender = (async () => {
      while (sending) {
        client.frame(seq++);
        await sleep(20); // paces the sender: 50 frames a second
      }
    })();
    await vi.waitFor(() => expect(seq).toBeGreaterThan(40), { timeout: 20_000 });
    const res = await fetch(`${instance.url}/me`, { method: 'DELETE', headers: { authorization: `Bearer ${user}` } });
    expect([204, 202]).toContain(res.status);

    const released = await client.waitFor({ type: 'RecordingReleased', meeting_id: meetingId }, { timeoutMs: 15_000 });
    expect(released).toMatchObject({ audio_version: started.audio_version, reason: 'not_recording' });
    const atRelease = seq; // frames after the release are refused, not stored
    await vi.waitFor(() => expect(seq).toBeGreaterThan(atRelease + 10), { timeout: 20_000 });
    sending = false;
    await sender;
    // The instance has let go of the take: anything it was still writing has been committed or deleted.
    await vi.waitFor(() => expect([...instance.live.recorders.values()].map((r) => r.state)).toEqual([]), {
      timeout: 20_000,
    });
    await runSweep(instance.rt, { erasureMinAgeMs: 0 }); // finishes an erasure answered with 202

    expect(await rowsNaming(instance.rt.db, [userId, meetingId, started.transcription_id])).toEqual([]);
    expect(await list()).toEqual([]);
    client.close();
  }, 60_000);

  it('should release a take whose stop is under way when the account is erased', async () => {
    const { instance } = ctx;
    const user = await token(instance.config, 'live-erase-stopping');
    const meetingId = await createMeeting(instance, user);
    const client = await TestClient.connect(instance.wsUrl, user);
    await client.start(meetingId);
    for (let seq = 0; seq < 20; seq++) client.frame(seq);
    await client.acked(meetingId, 19);
    client.send({ type: 'StopRecordingCommand', meeting_id: meetingId });
    // In the settle time: the take is stopping.
    await vi.waitFor(() => expect([...instance.live.recorders.values()].map((r) => r.state)).toEqual(['settling']), {
      timeout: 20_000,
    });
    const res = await fetch(`${instance.url}/me`, { method: 'DELETE', headers: { authorization: `Bearer ${user}` } });
    expect(res.status).toBe(204);
    // The stop finds its take gone and lets go at once, instead of retrying its stop record.
    const released = await client.waitFor({ type: 'RecordingReleased', meeting_id: meetingId }, { timeoutMs: 30_000 });
    expect(released.reason).toBe('not_recording');
    expect(client.ofType('RecordingStopped')).toEqual([]);
    expect(await rowsNaming(instance.rt.db, [meetingId])).toEqual([]);
    client.close();
  }, 60_000);
});
