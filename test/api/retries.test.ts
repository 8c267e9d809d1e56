// Retries whose first attempt succeeded and moved the state on (docs/retries.md): each repeats
// the first successful request after that and gets the first answer or the documented one,
// never a refusal of the work that was done.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimForFinalize } from '@mi/lib/repositories/finalize';
import { gapPrefix } from '@mi/lib/objects/take-objects';
import { listManifest } from '@mi/lib/repositories/manifest';
import { runSweep } from '../../functions/sweep';
import { startApi, type ApiHarness, type TestResponse } from '../harness';
import {
  createTake,
  expireGapDeadline,
  framesBytes,
  stopTake,
  storeLiveSegment,
  type Take,
} from '../recording-fixtures';

let api: ApiHarness;
let alice: string;

beforeAll(async () => {
  api = await startApi({ PUBSUB_TOPIC_RECORDING_FINALIZED: `finalized-${randomUUID().slice(0, 8)}` });
  await api.rt.bus.ensureTopic(api.config.PUBSUB_TOPIC_RECORDING_FINALIZED);
  alice = await api.token('retry-alice');
});
afterAll(async () => api?.close());

/** The same answer again, byte for byte, marked as a replay. */
function expectReplayOf(replay: TestResponse, first: TestResponse): void {
  expect(replay.status).toBe(first.status);
  expect(replay.text).toBe(first.text);
  expect(replay.headers.get('idempotent-replayed')).toBe('true');
}

describe('gap upload retried after the take moved on', () => {
  const gapPath = (t: Take, start: number, end: number) =>
    `/meetings/${t.meetingId}/recording/audio/${start}-${end}?audio_version=${t.audioVersion}`;
  const put = (t: Take, start: number, end: number, bytes = framesBytes(start, end)) =>
    api.request('PUT', gapPath(t, start, end), {
      token: alice,
      raw: bytes,
      headers: { 'content-type': 'application/octet-stream' },
    });
  const state = async (t: Take) =>
    (await api.request('GET', `/meetings/${t.meetingId}/recording`, { token: alice })).body.state;
  const rowsOf = async (t: Take) =>
    (await listManifest(api.rt.db, t.meetingId, t.audioVersion)).map((r) => [r.start_sequence, r.end_sequence]);

  /** A take stopped by the user with frames 0-9 and 20-29 stored: 10-19 is its last gap. */
  async function takeWithLastGap(): Promise<Take> {
    const take = await createTake(api, alice);
    await storeLiveSegment(api, take, 0, 9);
    await storeLiveSegment(api, take, 20, 29);
    await stopTake(api, take);
    return take;
  }

  it('should answer 200 to the identical last gap resent once the take is finalized, 409 to other bytes, 410 to a new range', async () => {
    const take = await takeWithLastGap();
    const first = await put(take, 10, 19);
    expect(first.status).toBe(201);
    // Filling the last gap makes the take due: the sweep finalizes it.
    expect((await runSweep(api.sweeper)).finalized).toBeGreaterThanOrEqual(1);
    await expect.poll(() => state(take)).toBe('finalized');

    const retry = await put(take, 10, 19);
    expect(retry.status, retry.text).toBe(200);
    expect(retry.body).toEqual(first.body);
    // A live segment's range (its row has no sha256: the bytes are compared) is confirmed too.
    expect((await put(take, 0, 9)).status).toBe(200);

    const other = framesBytes(10, 19);
    other[5] ^= 0xff;
    const conflict = await put(take, 10, 19, other);
    expect(conflict.status).toBe(409);
    expect(conflict.headers.get('content-type')).toMatch(/problem\+json/);
    expect(conflict.body.detail).toMatch(/other bytes/);
    expect((await put(take, 5, 14)).status).toBe(409); // reaches over two stored ranges

    const tail = await put(take, 30, 39);
    expect(tail.status).toBe(410);
    expect(tail.headers.get('content-type')).toMatch(/problem\+json/);
    expect(tail.body.type).toMatch(/\/gone$/);
    expect(tail.body.detail).toMatch(/is finalized: every missing range was filled/);
    expect(tail.body.detail).not.toMatch(/deadline \(.*\) has passed/);

    expect(await rowsOf(take)).toEqual([
      [0, 9],
      [10, 19],
      [20, 29],
    ]);
    // Nothing refused left an object behind, and the retries recorded nothing.
    expect(await api.rt.store.list(gapPrefix(take.meetingId, take.audioVersion))).toHaveLength(1);
    const events = await api.request('GET', `/meetings/${take.meetingId}/recording/events?limit=50`, { token: alice });
    expect(events.body.items.filter((e) => e.event_type === 'gap_uploaded')).toHaveLength(1);
  });

  it('should answer 200 to the identical range while the take is finalizing, and 410 saying so to a new range', async () => {
    const take = await takeWithLastGap();
    const first = await put(take, 10, 19);
    expect(first.status).toBe(201);
    // The sweep's claim: it is composing the take's audio now.
    expect(await claimForFinalize(api.rt.db, take.meetingId, take.audioVersion)).not.toBeNull();
    expect(await state(take)).toBe('finalizing');

    const retry = await put(take, 10, 19);
    expect(retry.status, retry.text).toBe(200);
    expect(retry.body).toEqual(first.body);
    const tail = await put(take, 30, 39);
    expect(tail.status).toBe(410);
    expect(tail.body.detail).toMatch(/is finalizing: every missing range was filled, so its audio is being composed/);
  });

  it('should answer 410 saying the deadline passed to any upload after it, the identical range included', async () => {
    const take = await takeWithLastGap();
    expect((await put(take, 10, 14)).status).toBe(201);
    await expireGapDeadline(api, take);
    for (const [start, end] of [
      [10, 14],
      [15, 19],
    ]) {
      const late = await put(take, start, end);
      expect(late.status, `${start}-${end}`).toBe(410);
      expect(late.body.detail).toMatch(/the gap upload deadline \(.+\) has passed/);
    }
  });
});

describe('Idempotency-Key replayed after the state moved on', () => {
  it('should replay the create of a meeting deleted since', async () => {
    const key = randomUUID();
    const body = { title: `gone ${key}`, source_type: 'text' };
    const first = await api.post(alice, '/meetings', body, key);
    expect(first.status).toBe(201);
    expect((await api.request('DELETE', `/meetings/${first.body.id}`, { token: alice })).status).toBe(204);
    expectReplayOf(await api.post(alice, '/meetings', body, key), first);
    expect((await api.request('GET', `/meetings/${first.body.id}`, { token: alice })).status).toBe(404);
  });

  it('should replay the create of a transcription completed since (the first answer: pending)', async () => {
    const meetingId = await api.meeting(alice);
    const key = randomUUID();
    const first = await api.post(alice, `/meetings/${meetingId}/transcriptions`, undefined, key);
    expect(first.status).toBe(201);
    expect(first.body.status).toBe('pending');
    for (const status of ['transcribing', 'synthesizing', 'completed']) {
      const moved = await api.request('PATCH', `/transcriptions/${first.body.id}`, {
        token: api.serviceToken,
        body: { status },
      });
      expect(moved.status, moved.text).toBe(200);
    }
    expectReplayOf(await api.post(alice, `/meetings/${meetingId}/transcriptions`, undefined, key), first);
    const transcriptions = await api.request('GET', `/meetings/${meetingId}/transcriptions`, { token: alice });
    expect(transcriptions.body.items).toHaveLength(1);
  });

  it('should answer a repeated status PATCH to the status the transcription already has with 200, changing nothing', async () => {
    const meetingId = await api.meeting(alice);
    const t = (await api.post(alice, `/meetings/${meetingId}/transcriptions`)).body.id;
    const patch = (status: string) =>
      api.request('PATCH', `/transcriptions/${t}`, { token: api.serviceToken, body: { status } });
    for (const status of ['transcribing', 'synthesizing', 'completed']) expect((await patch(status)).status).toBe(200);
    const again = await patch('completed');
    expect(again.status, again.text).toBe(200);
    expect(again.body.status).toBe('completed');
    const history = await api.request('GET', `/transcriptions/${t}/status-history`, { token: alice });
    expect(history.body.items.map((h) => h.status)).toEqual(['pending', 'transcribing', 'synthesizing', 'completed']);
  });

  it('should replay an ML segment append (204) after the transcription completed, storing nothing twice', async () => {
    const meetingId = await api.meeting(alice);
    const t = (await api.post(alice, `/meetings/${meetingId}/transcriptions`)).body.id;
    const key = randomUUID();
    const append = () =>
      api.request('POST', `/transcriptions/${t}/segments`, {
        token: api.serviceToken,
        body: { segments: [{ text: 'once', start_ms: 0, end_ms: 100 }] },
        headers: { 'idempotency-key': key },
      });
    const first = await append();
    expect(first.status).toBe(204);
    for (const status of ['transcribing', 'synthesizing', 'completed'])
      await api.request('PATCH', `/transcriptions/${t}`, { token: api.serviceToken, body: { status } });
    expectReplayOf(await append(), first);
    const segments = await api.request('GET', `/transcriptions/${t}/segments`, { token: alice });
    expect(segments.body.items.map((s) => s.text)).toEqual(['once']);
  });

  it('should replay a merge after the other person is gone, and after the merged person was deleted too', async () => {
    const keep = (await api.post(alice, '/people', { display_name: 'Keep' })).body.id;
    const other = (await api.post(alice, '/people', { display_name: 'Other' })).body.id;
    const key = randomUUID();
    const merge = () =>
      api.request('POST', `/people/${keep}/merge`, {
        token: alice,
        body: { person_id: other },
        headers: { 'idempotency-key': key },
      });
    const first = await merge();
    expect(first.status, first.text).toBe(200);
    expect((await api.request('GET', `/people/${other}`, { token: alice })).status).toBe(404);
    const replay = await merge();
    expectReplayOf(replay, first);
    expect(replay.headers.get('etag')).toBe(first.headers.get('etag'));

    expect((await api.request('DELETE', `/people/${keep}`, { token: alice })).status).toBe(204);
    expectReplayOf(await merge(), first);
    // Without the key it is a new request: the people are gone (404, not a merge of nothing).
    const fresh = await api.request('POST', `/people/${keep}/merge`, {
      token: alice,
      body: { person_id: other },
      headers: { 'idempotency-key': randomUUID() },
    });
    expect(fresh.status).toBe(404);
  });

  it('should replay a webhook create after the webhook was deleted; a repeated DELETE answers 404', async () => {
    const key = randomUUID();
    const body = { url: 'http://localhost:9/hook', event_types: ['EntityChanged'] };
    const first = await api.post(alice, '/webhooks', body, key);
    expect(first.status).toBe(201);
    const del = () => api.request('DELETE', `/webhooks/${first.body.id}`, { token: alice });
    expect((await del()).status).toBe(204);
    expectReplayOf(await api.post(alice, '/webhooks', body, key), first);
    const again = await del();
    expect(again.status).toBe(404);
    expect(again.headers.get('content-type')).toMatch(/problem\+json/);
    const list = await api.request('GET', '/webhooks', { token: alice });
    expect(list.body.items.map((w) => w.id)).not.toContain(first.body.id);
  });

  it('should answer a DELETE repeated after the record is gone with 404, If-Match or not; attendee PUT/DELETE repeat 204', async () => {
    const meetingId = await api.meeting(alice);
    const point = await api.request('POST', `/meetings/${meetingId}/talking-points`, {
      token: api.serviceToken,
      body: { content: 'a point' },
      headers: { 'idempotency-key': randomUUID() },
    });
    expect(point.status, point.text).toBe(201);
    const records = [
      `/meetings/${await api.meeting(alice)}`,
      `/people/${(await api.post(alice, '/people', { display_name: 'Gone' })).body.id}`,
      `/tasks/${(await api.post(alice, '/tasks', { content: 'gone' })).body.id}`,
      `/notes/${(await api.post(alice, '/notes', { content: 'gone' })).body.id}`,
      `/talking-points/${point.body.id}`,
    ];
    for (const path of records) {
      const etag = (await api.request('GET', path, { token: alice })).headers.get('etag');
      const del = (headers: Record<string, string> = {}) => api.request('DELETE', path, { token: alice, headers });
      expect((await del()).status, path).toBe(204);
      const again = await del();
      expect(again.status, path).toBe(404);
      expect(again.headers.get('content-type')).toMatch(/problem\+json/);
      expect((await del({ 'if-match': etag ?? '*' })).status, `${path} If-Match`).toBe(404);
    }

    const person = (await api.post(alice, '/people', { display_name: 'Attendee' })).body.id;
    const attendee = `/meetings/${meetingId}/attendees/${person}`;
    for (const method of ['PUT', 'PUT', 'DELETE', 'DELETE'])
      expect((await api.request(method, attendee, { token: alice })).status, method).toBe(204);
  });

  it('should run a new request once the key expired (24 h): the replay window is the key', async () => {
    const key = randomUUID();
    const body = { title: `expired ${key}`, source_type: 'text' };
    const first = await api.post(alice, '/meetings', body, key);
    await api.rt.db.query(
      'test.expire_key',
      `UPDATE idempotency_record SET expires_at = now() - interval '1 second' WHERE key = $1`,
      [key],
    );
    const second = await api.post(alice, '/meetings', body, key);
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
    expect(second.body.id).not.toBe(first.body.id);
  });
});
