// Integers past their column's range (decisions.md section 6): an audio_version of 2^31 names no
// take (recording_not_found / 404), never a server failure; integers past what a JSON number
// holds exactly are refused as malformed.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TestClient, createMeeting, token, useInstance } from '../live/helpers';

const live = useInstance();

describe('integers past a column', () => {
  it('should answer a resume of audio_version 2^31 with recording_not_found, and keep the connection', async () => {
    const t = await token(live.instance.config, 'bounds');
    const meetingId = await createMeeting(live.instance, t);
    const client = await TestClient.connect(live.instance.wsUrl, t);
    for (const audio_version of [2 ** 31, Number.MAX_SAFE_INTEGER]) {
      expect(await client.resume(meetingId, audio_version)).toMatchObject({
        type: 'error',
        code: 'recording_not_found',
        ref: 'ResumeRecordingCommand',
      });
    }
    expect(await client.resume(meetingId, 2 ** 53 + 2)).toMatchObject({ type: 'error', code: 'bad_message' });
    expect(await client.start(meetingId, { max_duration_seconds: 2 ** 31 })).toMatchObject({
      type: 'error',
      code: 'bad_message',
    });
    expect(await client.start(meetingId)).toMatchObject({ type: 'RecordingStarted', audio_version: 1 });
    await client.stop(meetingId);
    client.close();
  });

  it('should answer 404 over REST for an audio_version past the column, for reads and gap uploads', async () => {
    const t = await token(live.instance.config, 'bounds-rest');
    const meetingId = await createMeeting(live.instance, t);
    const auth = { authorization: `Bearer ${t}` };
    const get = await fetch(`${live.instance.url}/meetings/${meetingId}/recording?audio_version=2147483648`, {
      headers: auth,
    });
    expect(get.status).toBe(404);
    const put = await fetch(`${live.instance.url}/meetings/${meetingId}/recording/audio/0-0?audio_version=2147483648`, {
      method: 'PUT',
      headers: { ...auth, 'content-type': 'application/octet-stream' },
      body: Buffer.alloc(3200),
    });
    expect(put.status).toBe(404);
  });

  it('should close a hello whose last_seq is past an exact JSON integer as malformed', async () => {
    const t = await token(live.instance.config, 'bounds-hello');
    const client = await TestClient.open(live.instance.wsUrl);
    client.send({ type: 'hello', token: t, client_id: randomUUID(), last_seq: 2 ** 53 + 2 });
    expect((await client.closed).code).toBe(4400);
  });
});
