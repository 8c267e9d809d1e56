// Integers past their column's range (decisions.md section 6): an audio_version of 2^31 names no
// take (recording_not_found / 404), never a server failure; integers past what a JSON number
// holds exactly are refused as malformed.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OpenedDatabase } from '@mi/lib/db/open';
import { TestClient, createMeeting, fileEnv, openTestDatabase, startInstance, token, type Instance } from '../live/helpers';

let database: OpenedDatabase;
let instance: Instance;

beforeAll(async () => {
  database = await openTestDatabase();
  instance = await startInstance(database, { ...fileEnv(), ML_SERVICE_URL: 'http://127.0.0.1:9' });
}, 60_000);
afterAll(async () => {
  await instance?.close();
  await database?.close();
});

describe('integers past a column', () => {
  it('should answer a resume of audio_version 2^31 with recording_not_found, and keep the connection', async () => {
    const t = await token(instance.config, 'bounds');
    const meetingId = await createMeeting(instance, t);
    const client = await TestClient.connect(instance.wsUrl, t);
    for (const audio_version of [2 ** 31, Number.MAX_SAFE_INTEGER]) {
      expect(await client.resume(meetingId, audio_version)).toMatchObject({ type: 'error', code: 'recording_not_found', ref: 'ResumeRecordingCommand' });
    }
    expect(await client.resume(meetingId, 2 ** 53 + 2)).toMatchObject({ type: 'error', code: 'bad_message' });
    expect(await client.start(meetingId, { max_duration_seconds: 2 ** 31 })).toMatchObject({ type: 'error', code: 'bad_message' });
    expect(await client.start(meetingId)).toMatchObject({ type: 'RecordingStarted', audio_version: 1 });
    await client.stop(meetingId);
    client.close();
  });

  it('should answer 404 over REST for an audio_version past the column, for reads and gap uploads', async () => {
    const t = await token(instance.config, 'bounds-rest');
    const meetingId = await createMeeting(instance, t);
    const auth = { authorization: `Bearer ${t}` };
    const get = await fetch(`${instance.url}/meetings/${meetingId}/recording?audio_version=2147483648`, { headers: auth });
    expect(get.status).toBe(404);
    const put = await fetch(`${instance.url}/meetings/${meetingId}/recording/audio/0-0?audio_version=2147483648`, {
      method: 'PUT',
      headers: { ...auth, 'content-type': 'application/octet-stream' },
      body: Buffer.alloc(3200),
    });
    expect(put.status).toBe(404);
  });

  it('should close a hello whose last_seq is past an exact JSON integer as malformed', async () => {
    const t = await token(instance.config, 'bounds-hello');
    const client = await TestClient.open(instance.wsUrl);
    client.send({ type: 'hello', token: t, client_id: randomUUID(), last_seq: 2 ** 53 + 2 });
    expect((await client.closed).code).toBe(4400);
  });
});
