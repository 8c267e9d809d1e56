// GET /meetings/{id}/recording, GET /meetings/{id}/recording/events and the gap-recovery
// upload PUT /meetings/{id}/recording/audio/{start}-{end}?audio_version=N.
import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gapPrefix } from '@mi/lib/objects/take-objects';
import { listManifest } from '@mi/lib/repositories/manifest';
import { recordEvent } from '@mi/lib/repositories/recording-history';
import { startApi, type ApiHarness } from '../harness';
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
let bob: string;
const MAX_CHUNK = 4096;

beforeAll(async () => {
  api = await startApi({ RECORDING_MAX_CHUNK_BYTES: String(MAX_CHUNK) });
  alice = await api.token('rec-alice');
  bob = await api.token('rec-bob');
});
afterAll(async () => api?.close());

const gapPath = (t: Take, start: number | string, end: number | string, version: number | string = t.audioVersion) =>
  `/meetings/${t.meetingId}/recording/audio/${start}-${end}?audio_version=${version}`;

const put = (path: string, raw: BodyInit, opts: { token?: string; headers?: Record<string, string> } = {}) =>
  api.request('PUT', path, {
    token: opts.token ?? alice,
    raw,
    headers: { 'content-type': 'application/octet-stream', ...opts.headers },
  });

/** A stopped take with frames 0-9 and 20-29 stored (10-19 missing). */
async function stoppedTakeWithGap(): Promise<Take> {
  const take = await createTake(api, alice);
  await storeLiveSegment(api, take, 0, 9);
  await storeLiveSegment(api, take, 20, 29);
  await stopTake(api, take);
  return take;
}

describe('GET /meetings/{id}/recording', () => {
  it('should report the latest take with its coverage', async () => {
    const take = await stoppedTakeWithGap();
    const res = await api.request('GET', `/meetings/${take.meetingId}/recording`, { token: alice });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      meeting_id: take.meetingId,
      audio_version: 1,
      state: 'stopped',
      transcription_id: take.transcriptionId,
      highest_contiguous_sequence: 9,
      missing_ranges: [[10, 19]],
      frames_stored: 20,
      bytes_stored: 2000,
      stop_reason: 'user',
      finalized_at: null,
    });
    expect(Date.parse(res.body.gap_upload_deadline!)).toBeGreaterThan(Date.now() + 1700_000);

    const second = await createTake(api, alice, { meetingId: take.meetingId });
    expect((await api.request('GET', `/meetings/${take.meetingId}/recording`, { token: alice })).body).toMatchObject({
      audio_version: 2,
      state: 'recording',
      highest_contiguous_sequence: -1,
      missing_ranges: [],
      gap_upload_deadline: null,
    });
    const first = await api.request('GET', `/meetings/${take.meetingId}/recording?audio_version=1`, { token: alice });
    expect(first.body.audio_version).toBe(1);
    expect(second.audioVersion).toBe(2);
  });

  it('should answer 404 for a meeting without a recording, a missing meeting or another user, 401/403 for bad credentials', async () => {
    const plain = await api.request('POST', '/meetings', {
      token: alice,
      headers: { 'idempotency-key': randomUUID() },
      body: { title: 'No rec', source_type: 'recording' },
    });
    const none = await api.request('GET', `/meetings/${plain.body.id}/recording`, { token: alice });
    expect(none.status).toBe(404);
    expect(none.body.detail).toBe('recording not found');
    expect((await api.request('GET', `/meetings/${randomUUID()}/recording`, { token: alice })).body.detail).toBe(
      'meeting not found',
    );
    const take = await stoppedTakeWithGap();
    expect((await api.request('GET', `/meetings/${take.meetingId}/recording`, { token: bob })).status).toBe(404);
    expect(
      (await api.request('GET', `/meetings/${take.meetingId}/recording?audio_version=7`, { token: alice })).status,
    ).toBe(404);
    expect(
      (await api.request('GET', `/meetings/${take.meetingId}/recording?audio_version=x`, { token: alice })).status,
    ).toBe(422);
    expect((await api.request('GET', `/meetings/${take.meetingId}/recording`)).status).toBe(401);
    expect(
      (await api.request('GET', `/meetings/${take.meetingId}/recording`, { token: api.serviceToken })).status,
    ).toBe(403);
  });
});

describe('GET /meetings/{id}/recording/events', () => {
  it('should list events newest first with a cursor', async () => {
    const take = await stoppedTakeWithGap();
    for (const type of ['a', 'b', 'c']) await recordEvent(api.rt.db, take.meetingId, type, { n: type });
    const first = await api.request('GET', `/meetings/${take.meetingId}/recording/events?limit=2`, { token: alice });
    expect(first.status).toBe(200);
    expect(first.body.items.map((e) => e.event_type)).toEqual(['c', 'b']);
    expect(first.body.items[0]).toMatchObject({ meeting_id: take.meetingId, payload: { n: 'c' } });
    const rest = await api.request(
      'GET',
      `/meetings/${take.meetingId}/recording/events?limit=2&cursor=${first.body.next_cursor}`,
      { token: alice },
    );
    expect(rest.body.items.map((e) => e.event_type)).toEqual(['a', 'recording_started']);
    expect(rest.body.next_cursor).toBeNull();
    expect(
      (await api.request('GET', `/meetings/${take.meetingId}/recording/events?cursor=garbage`, { token: alice }))
        .status,
    ).toBe(400);
    expect(
      (await api.request('GET', `/meetings/${take.meetingId}/recording/events?limit=0`, { token: alice })).status,
    ).toBe(422);
    expect((await api.request('GET', `/meetings/${take.meetingId}/recording/events`, { token: bob })).status).toBe(404);
    expect(
      (await api.request('GET', `/meetings/${take.meetingId}/recording/events`, { token: api.serviceToken })).status,
    ).toBe(403);
  });
});

describe('PUT /meetings/{id}/recording/audio/{start}-{end}', () => {
  it('should store a missing range (201), record it, and fill the coverage', async () => {
    const take = await stoppedTakeWithGap();
    const bytes = framesBytes(10, 19);
    const res = await put(gapPath(take, 10, 19), bytes);
    expect(res.status).toBe(201);
    const sha = createHash('sha256').update(bytes).digest('hex');
    expect(res.body).toEqual({
      audio_version: 1,
      start_sequence: 10,
      end_sequence: 19,
      byte_count: 1000,
      sha256: sha,
      highest_contiguous_sequence: 29,
      missing_ranges: [],
    });

    const row = (await listManifest(api.rt.db, take.meetingId, 1)).find((r) => r.start_sequence === 10)!;
    expect(row).toMatchObject({
      end_sequence: 19,
      byte_count: 1000,
      sha256: sha,
      started_at_ms: 1000,
      duration_ms: 1000,
    });
    expect(await api.rt.store.readAll(row.object_name)).toEqual(bytes);
    const events = await api.request('GET', `/meetings/${take.meetingId}/recording/events?limit=1`, { token: alice });
    expect(events.body.items[0]).toMatchObject({
      event_type: 'gap_uploaded',
      payload: { audio_version: 1, start_sequence: 10, end_sequence: 19, sha256: sha },
    });
    const rec = await api.request('GET', `/meetings/${take.meetingId}/recording`, { token: alice });
    expect(rec.body).toMatchObject({ highest_contiguous_sequence: 29, missing_ranges: [] });
  });

  it('should answer 200 for the identical range again (also one stored live) and 409 for other bytes or overlaps', async () => {
    const take = await stoppedTakeWithGap();
    const bytes = framesBytes(10, 14);
    expect((await put(gapPath(take, 10, 14), bytes)).status).toBe(201);
    const again = await put(gapPath(take, 10, 14), bytes);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ start_sequence: 10, end_sequence: 14, missing_ranges: [[15, 19]] });
    // A live segment (no sha256 stored) re-sent with the same bytes.
    expect((await put(gapPath(take, 0, 9), framesBytes(0, 9))).status).toBe(200);

    const other = Buffer.from(bytes);
    other[0] ^= 0xff;
    const conflict = await put(gapPath(take, 10, 14), other);
    expect(conflict.status).toBe(409);
    expect(conflict.headers.get('content-type')).toMatch(/problem\+json/);
    expect((await put(gapPath(take, 0, 9), Buffer.alloc(1000, 1))).status).toBe(409);
    expect((await put(gapPath(take, 12, 16), framesBytes(12, 16))).status).toBe(409); // partial overlap
    expect((await put(gapPath(take, 15, 25), framesBytes(15, 25))).status).toBe(409); // reaches into 20-29
    expect((await listManifest(api.rt.db, take.meetingId, 1)).map((r) => [r.start_sequence, r.end_sequence])).toEqual([
      [0, 9],
      [10, 14],
      [20, 29],
    ]);
    // Refused uploads leave no objects behind.
    const objects = await api.rt.store.list(`recordings/${take.meetingId}/v1/gaps/`);
    expect(objects.map((o) => o.name)).toHaveLength(1);
  });

  it('should store one row when the same range is uploaded twice at once', async () => {
    const take = await stoppedTakeWithGap();
    const bytes = framesBytes(10, 19);
    const results = await Promise.all([put(gapPath(take, 10, 19), bytes), put(gapPath(take, 10, 19), bytes)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 201]);
    expect((await listManifest(api.rt.db, take.meetingId, 1)).filter((r) => r.start_sequence === 10)).toHaveLength(1);
  });

  it('should check Content-Digest (RFC 9530)', async () => {
    const take = await stoppedTakeWithGap();
    const bytes = framesBytes(10, 19);
    const wrong = createHash('sha256').update('other').digest('base64');
    expect(
      (await put(gapPath(take, 10, 19), bytes, { headers: { 'content-digest': `sha-256=:${wrong}:` } })).status,
    ).toBe(422);
    expect((await put(gapPath(take, 10, 19), bytes, { headers: { 'content-digest': 'sha-256=abc' } })).status).toBe(
      400,
    );
    const right = createHash('sha256').update(bytes).digest('base64');
    const ok = await put(gapPath(take, 10, 19), bytes, {
      headers: {
        'content-digest': `sha-512=:${createHash('sha512').update(bytes).digest('base64')}:, sha-256=:${right}:`,
      },
    });
    expect(ok.status).toBe(201);
  });

  it('should answer 422 for a bad range, a missing audio_version or an empty body', async () => {
    const take = await stoppedTakeWithGap();
    const bytes = framesBytes(10, 19);
    const reversed = await put(gapPath(take, 19, 10), bytes);
    expect(reversed.status).toBe(422);
    expect((await put(gapPath(take, 'a', 19), bytes)).status).toBe(422);
    expect((await put(gapPath(take, -1, 19), bytes)).status).toBe(422);
    expect((await put(`/meetings/${take.meetingId}/recording/audio/10-19`, bytes)).status).toBe(422);
    expect((await put(gapPath(take, 10, 19, 0), bytes)).status).toBe(422);
    expect((await put(gapPath(take, 10, 19), Buffer.alloc(0))).status).toBe(422);
    expect((await put(`/meetings/not-a-uuid/recording/audio/10-19?audio_version=1`, bytes)).status).toBe(422);
  });

  it('should refuse a chunk above RECORDING_MAX_CHUNK_BYTES with 413, declared or streamed', async () => {
    const take = await stoppedTakeWithGap();
    const big = Buffer.alloc(MAX_CHUNK + 1, 7);
    expect((await put(gapPath(take, 10, 19), big)).status).toBe(413);
    // Chunked transfer (no Content-Length): counted while streaming.
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 5; i++) controller.enqueue(new Uint8Array(1024));
        controller.close();
      },
    });
    expect((await put(gapPath(take, 10, 19), stream)).status).toBe(413);
    expect((await put(gapPath(take, 10, 19), framesBytes(10, 19))).status).toBe(201);
  });

  it("should answer 422 to a range at or past the take's ceiling and to a body that is not whole frames, storing nothing", async () => {
    const take = await stoppedTakeWithGap(); // max_duration_seconds 14,400: sequences 0-143,999
    for (const [start, end] of [
      [999_999_999_999_998, 999_999_999_999_999],
      [1000, 999_999_999_999_990],
      [143_999, 144_000],
    ]) {
      const res = await put(gapPath(take, start, end), Buffer.alloc(2, 1));
      expect(res.status, `${start}-${end}`).toBe(422);
      expect(res.body.detail).toMatch(/sequence_out_of_range/);
    }
    // pcm_s16le at 500 Hz: exactly 100 bytes a frame.
    for (const bytes of [
      Buffer.alloc(1, 1),
      framesBytes(10, 19).subarray(1),
      Buffer.concat([framesBytes(10, 19), Buffer.alloc(1)]),
    ]) {
      const res = await put(gapPath(take, 10, 19), bytes);
      expect(res.status, `${bytes.length} bytes`).toBe(422);
      expect(res.body.errors).toEqual([{ path: 'body', message: 'must be 1000 bytes' }]);
    }
    const recording = await api.request('GET', `/meetings/${take.meetingId}/recording`, { token: alice });
    expect(recording.body).toMatchObject({ frames_stored: 20, missing_ranges: [[10, 19]] });
    const opus = await createTake(api, alice, { encoding: 'webm_opus' });
    await storeLiveSegment(api, opus, 0, 9);
    await storeLiveSegment(api, opus, 20, 29);
    await stopTake(api, opus);
    expect((await put(gapPath(opus, 10, 19), Buffer.alloc(9, 1))).status).toBe(422); // less than a byte a frame
    expect((await put(gapPath(opus, 10, 19), Buffer.alloc(10, 1))).status).toBe(201);
  });

  it('should answer 422 too_many_gaps to an upload that would leave more than 64 missing ranges, storing nothing', async () => {
    const take = await createTake(api, alice);
    await storeLiveSegment(api, take, 0, 0);
    await stopTake(api, take);
    // Scattered single frames 2, 4, …, 128: each opens a hole before it, up to 64.
    for (let seq = 2; seq <= 128; seq += 2)
      expect((await put(gapPath(take, seq, seq), framesBytes(seq, seq))).status, `${seq}`).toBe(201);
    const objects = async () => (await api.rt.store.list(gapPrefix(take.meetingId, take.audioVersion))).length;
    expect(await objects()).toBe(64);
    const refused = [
      [130, 130], // past the highest frame with a gap
      [200, 210],
    ];
    for (const [start, end] of refused) {
      const res = await put(gapPath(take, start, end), framesBytes(start, end));
      expect(res.status, `${start}-${end}`).toBe(422);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.body.type).toMatch(/\/too_many_gaps$/);
    }
    expect(await objects()).toBe(64);
    const recording = await api.request('GET', `/meetings/${take.meetingId}/recording`, { token: alice });
    expect(recording.body.missing_ranges).toHaveLength(64);
    expect(recording.body.frames_stored).toBe(65);
    // Right after the highest frame, or filling a hole, is always taken; in order never meets the bound.
    expect((await put(gapPath(take, 129, 129), framesBytes(129, 129))).status).toBe(201);
    expect((await put(gapPath(take, 1, 1), framesBytes(1, 1))).status).toBe(201);
    expect((await put(gapPath(take, 131, 131), framesBytes(131, 131))).status).toBe(201); // 64 holes again
    expect((await put(gapPath(take, 133, 133), framesBytes(133, 133))).status).toBe(422);
  });

  it('should answer 409 while capture is open, 410 after the deadline or once finalized', async () => {
    const open = await createTake(api, alice);
    await storeLiveSegment(api, open, 0, 9);
    const capturing = await put(gapPath(open, 10, 19), framesBytes(10, 19));
    expect(capturing.status).toBe(409);
    expect(capturing.body.detail).toMatch(/still recording/);

    const late = await stoppedTakeWithGap();
    await expireGapDeadline(api, late);
    const gone = await put(gapPath(late, 10, 19), framesBytes(10, 19));
    expect(gone.status).toBe(410);
    expect(gone.body.detail).toMatch(/deadline/);

    const finalized = await stoppedTakeWithGap();
    await api.rt.db.query('test.finalize', `UPDATE recording SET state = 'finalized' WHERE meeting_id = $1`, [
      finalized.meetingId,
    ]);
    const closed = await put(gapPath(finalized, 10, 19), framesBytes(10, 19));
    expect(closed.status).toBe(410);
    expect(closed.body.detail).toMatch(/is finalized: every missing range was filled/);
    // A stored range sent again is still confirmed (docs/retries.md; test/api/retries.test.ts).
    expect((await put(gapPath(finalized, 0, 9), framesBytes(0, 9))).status).toBe(200);
  });

  it('should answer 503 with Retry-After and store nothing while object storage fails, then accept the retry', async () => {
    const take = await stoppedTakeWithGap();
    const faults = `${api.config.STORAGE_EMULATOR_HOST}/_emulator/faults`;
    const inject = await fetch(faults, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ mode: 'error503', count: 50, match: api.config.STORAGE_BUCKET }),
    });
    expect(inject.ok).toBe(true);
    try {
      const failed = await put(gapPath(take, 10, 19), framesBytes(10, 19));
      expect(failed.status).toBe(503);
      expect(failed.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(failed.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(failed.body.detail).toMatch(/storage/);
    } finally {
      await fetch(faults, { method: 'DELETE' });
    }
    expect((await listManifest(api.rt.db, take.meetingId, 1)).map((r) => r.start_sequence)).toEqual([0, 20]);
    expect((await put(gapPath(take, 10, 19), framesBytes(10, 19))).status).toBe(201);
  });

  it('should answer 404 for an unknown meeting or version and for another user, 401/403 for bad credentials', async () => {
    const take = await stoppedTakeWithGap();
    const bytes = framesBytes(10, 19);
    expect((await put(gapPath(take, 10, 19, 9), bytes)).status).toBe(404);
    expect((await put(`/meetings/${randomUUID()}/recording/audio/10-19?audio_version=1`, bytes)).status).toBe(404);
    expect((await put(gapPath(take, 10, 19), bytes, { token: bob })).status).toBe(404);
    expect((await api.request('PUT', gapPath(take, 10, 19), { raw: bytes })).status).toBe(401);
    expect((await put(gapPath(take, 10, 19), bytes, { token: api.serviceToken })).status).toBe(403);
    expect(await listManifest(api.rt.db, take.meetingId, 1)).toHaveLength(2);
  });
});
