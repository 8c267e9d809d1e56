// A StopRecordingCommand sent again after its take stopped (docs/retries.md): answered with the
// take's RecordingStopped, on the same connection or a new one, also once the take is finalized;
// never the no_recording refusal of a stop that happened.
import { describe, expect, it } from 'vitest';
import { getRecording } from '@mi/lib/repositories/recordings';
import { runSweep } from '../../functions/sweep';
import { TestClient, createMeeting, range, token, useInstance } from './helpers';

const ctx = useInstance();

describe('StopRecordingCommand repeated', () => {
  it('should answer a stop repeated after the take stopped, and after it was finalized, with its RecordingStopped', async () => {
    const { instance } = ctx;
    await instance.rt.bus.ensureTopic(instance.config.PUBSUB_TOPIC_RECORDING_FINALIZED);
    const t = await token(instance.config, 'stop-retry');
    const meetingId = await createMeeting(instance, t);
    const client = await TestClient.connect(instance.wsUrl, t);
    await client.start(meetingId);
    for (const seq of range(0, 9)) client.frame(seq);
    await client.acked(meetingId, 9);
    const first = await client.stop(meetingId);
    expect(first).toMatchObject({
      type: 'RecordingStopped',
      audio_version: 1,
      reason: 'user',
      highest_contiguous_sequence: 9,
      missing_ranges: [],
    });

    // The same connection, then a new one (the first answer was lost with its connection).
    expect(await client.stop(meetingId)).toEqual(first);
    client.close();
    const again = await TestClient.connect(instance.wsUrl, t);
    expect(await again.stop(meetingId)).toEqual(first);

    // No missing range and stopped by the user: the sweep finalizes it.
    expect((await runSweep(instance.rt)).finalized).toBe(1);
    expect((await getRecording(instance.rt.db, meetingId))?.state).toBe('finalized');
    expect(await again.stop(meetingId)).toEqual(first);
    expect(again.ofType('error')).toEqual([]);
    again.close();
  });

  it('should still answer no_recording where no take of the meeting stopped (none, open elsewhere, not the caller’s); start and resume repeated', async () => {
    const { instance } = ctx;
    const t = await token(instance.config, 'stop-retry-none');
    const client = await TestClient.connect(instance.wsUrl, t);
    const fresh = await createMeeting(instance, t);
    expect(await client.stop(fresh)).toMatchObject({ type: 'error', code: 'no_recording' });

    const recorder = await TestClient.connect(instance.wsUrl, t);
    const open = await createMeeting(instance, t);
    const started = await recorder.start(open);
    expect(await client.stop(open)).toMatchObject({ type: 'error', code: 'no_recording' });
    // A start repeated (its answer lost) names the open take to resume; a resume repeated on the
    // connection that holds the take is answered again.
    expect(await client.start(open)).toMatchObject({
      type: 'error',
      code: 'recording_open',
      message: expect.stringMatching(/^audio_version 1 of this meeting is still recording/),
    });
    expect(await recorder.resume(open, started.audio_version)).toMatchObject({ type: 'RecordingResumed' });

    const bob = await token(instance.config, 'stop-retry-bob');
    const bobs = await TestClient.connect(instance.wsUrl, bob);
    await bobs.start(await createMeeting(instance, bob));
    // Alice's take stopped: Bob's stop of her meeting learns nothing of it.
    expect(await recorder.stop(open)).toMatchObject({ type: 'RecordingStopped' });
    expect(await bobs.stop(open)).toMatchObject({ type: 'error', code: 'no_recording' });
    for (const c of [client, recorder, bobs]) c.close();
  });
});
