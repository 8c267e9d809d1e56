// Voice samples (decisions.md section 6): which paths add and remove them, the person's model
// that follows from them, DELETE /meetings/{id}/speaker-labels/{label},
// GET /people/{id}/voice-samples, and removeMeetingVoiceSamples for purge and erasure.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeMeetingVoiceSamples } from '@mi/lib/repositories/voice-samples';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let alice: string;
let bob: string;
let aliceId: string;

let seed = 7;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
const randomVector = () => Array.from({ length: 192 }, () => rand() * (1 + Math.abs(rand()) * 3));
const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const normalize = (v: number[]) => v.map((x) => x / norm(v));
const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i], 0);
const sumOf = (vs: number[][]) => vs.reduce((s, v) => s.map((x, i) => x + v[i]), Array(192).fill(0));

const sql = (text: string, params: unknown[] = []) => api.rt.db.query('test.sql', text, params).then((r) => r.rows);
const person = async (token: string) =>
  (await api.post(token, '/people', { display_name: `p-${randomUUID().slice(0, 8)}` })).body.id as string;
const transcription = async (token: string, meetingId: string) =>
  (await api.post(token, `/meetings/${meetingId}/transcriptions`)).body.id as string;
type Seg = { speaker_label: string; feature_vector?: number[] | null; person_id?: string | null };
let at = 0;
const body = (segs: Seg[]) => ({ segments: segs.map((s) => ({ text: 'x', start_ms: at++, ...s })) });
const append = (t: string, segs: Seg[]) =>
  api.request('POST', `/transcriptions/${t}/segments`, { token: api.serviceToken, body: body(segs) });
const replace = (t: string, segs: Seg[]) =>
  api.request('PUT', `/transcriptions/${t}/segments`, { token: api.serviceToken, body: body(segs) });
const assign = (m: string, speaker_label: string, person_id: string, token = alice) =>
  api.request('POST', `/meetings/${m}/speaker-labels`, {
    token,
    body: { speaker_label, person_id },
    headers: { 'idempotency-key': randomUUID() },
  });
const unassign = (m: string, label: string, token = alice, headers: Record<string, string> = {}) =>
  api.request('DELETE', `/meetings/${m}/speaker-labels/${encodeURIComponent(label)}`, { token, headers });
const samples = (p: string, query: '' | `?${string}` = '', token = alice) =>
  api.request('GET', `/people/${p}/voice-samples${query}`, { token });

/** The person's model must be exactly what their samples give; returns it. */
async function expectModelOf(p: string, embeddings: number[][]) {
  const got = (await api.request('GET', `/people/${p}`, { token: alice })).body;
  if (!embeddings.length) {
    expect(got).toMatchObject({ voice_vector: null, voice_confidence: null, voice_model_status: 'untrained' });
    return got;
  }
  const expected = normalize(sumOf(embeddings.map(normalize)));
  expect(got.voice_model_status).toBe('ready');
  expect(dot(got.voice_vector!, expected)).toBeGreaterThan(0.999999);
  expect(got.voice_confidence).toBeCloseTo(
    embeddings.map(normalize).reduce((s, v) => s + dot(v, expected), 0) / embeddings.length,
    5,
  );
  expect((await sql('SELECT count(*)::int AS n FROM voice_sample WHERE person_id = $1', [p]))[0].n).toBe(
    embeddings.length,
  );
  return got;
}

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('alice');
  bob = await api.token('bob');
  aliceId = await api.userId(alice);
});
afterAll(() => api?.close());

describe('voice samples on every attributing path', () => {
  it('should record segments the ML service attributes, and stored assignments re-applied to appended and replaced segments', async () => {
    const [p, q] = [await person(alice), await person(alice)];
    const m = await api.meeting(alice, 'recording');
    const t = await transcription(alice, m);
    const v = [randomVector(), randomVector(), randomVector(), randomVector()];
    // The ML service names the person itself; a zero vector and a missing one are no samples.
    expect(
      (
        await append(t, [
          { speaker_label: 'S9', feature_vector: v[0], person_id: q },
          { speaker_label: 'S9', feature_vector: Array(192).fill(0), person_id: q },
          { speaker_label: 'S9', person_id: q },
        ])
      ).status,
    ).toBe(204);
    await expectModelOf(q, [v[0]]);
    expect(await api.lastEvent(aliceId)).toEqual(
      expect.objectContaining({ type: 'EntityChanged', entity: 'person', action: 'updated', id: q }),
    );

    await append(t, [{ speaker_label: 'S0', feature_vector: v[1] }]);
    await assign(m, 'S0', p);
    await append(t, [
      { speaker_label: 'S0', feature_vector: v[2] },
      { speaker_label: 'S1', feature_vector: v[3] },
    ]);
    await expectModelOf(p, [v[1], v[2]]);

    // A batch replace drops the samples of the segments it removes; the assignment still applies.
    expect(
      (
        await replace(t, [
          { speaker_label: 'S0', feature_vector: v[3] },
          { speaker_label: 'S1', feature_vector: v[0] },
        ])
      ).status,
    ).toBe(204);
    await expectModelOf(p, [v[3]]);
    await expectModelOf(q, []);
    const events = await api.lastEvents(aliceId, 3);
    expect(
      events
        .filter((e) => e.entity === 'person')
        .map((e) => e.id)
        .sort(),
    ).toEqual([p, q].sort());
  });

  it('should drop the samples with the person and leave the other people as they were', async () => {
    const [p, q] = [await person(alice), await person(alice)];
    const m = await api.meeting(alice, 'recording');
    const t = await transcription(alice, m);
    const v = [randomVector(), randomVector()];
    await append(t, [
      { speaker_label: 'A', feature_vector: v[0] },
      { speaker_label: 'B', feature_vector: v[1] },
    ]);
    await assign(m, 'A', p);
    await assign(m, 'B', q);
    expect((await api.request('DELETE', `/people/${p}`, { token: alice })).status).toBe(204);
    expect((await sql('SELECT count(*)::int AS n FROM voice_sample WHERE person_id = $1', [p]))[0].n).toBe(0);
    await expectModelOf(q, [v[1]]);
    // Its segments are unattributed; assigning the label anew makes them samples again.
    const r = await person(alice);
    await assign(m, 'A', r);
    await expectModelOf(r, [v[0]]);
  });
});

describe('DELETE /meetings/{id}/speaker-labels/{speaker_label}', () => {
  it('should remove the assignment, clear the segments, remove their samples and recompute the person', async () => {
    const p = await person(alice);
    const [m1, m2] = [await api.meeting(alice, 'recording'), await api.meeting(alice, 'recording')];
    const [t1, t2] = [await transcription(alice, m1), await transcription(alice, m2)];
    const v = [randomVector(), randomVector(), randomVector()];
    await append(t1, [
      { speaker_label: 'SPEAKER 1/ü', feature_vector: v[0] },
      { speaker_label: 'SPEAKER 1/ü', feature_vector: v[1] },
      { speaker_label: 'other', feature_vector: v[1] },
    ]);
    await append(t2, [{ speaker_label: 'SPEAKER 1/ü', feature_vector: v[2] }]);
    await assign(m1, 'SPEAKER 1/ü', p);
    await assign(m2, 'SPEAKER 1/ü', p);
    await expectModelOf(p, v);

    const clientId = randomUUID();
    const res = await unassign(m1, 'SPEAKER 1/ü', alice, { 'x-client-id': clientId });
    expect(res.status, res.text).toBe(204);
    expect(res.text).toBe('');
    expect(await sql('SELECT 1 FROM meeting_speaker_label WHERE meeting_id = $1', [m1])).toHaveLength(0);
    expect(await sql('SELECT DISTINCT person_id FROM transcript_segment WHERE transcription_id = $1', [t1])).toEqual([
      { person_id: null },
    ]);
    await expectModelOf(p, [v[2]]);
    const events = await sql(
      'SELECT payload, origin_client_id FROM event_outbox WHERE user_id = $1 ORDER BY seq DESC LIMIT 2',
      [aliceId],
    );
    expect(events.reverse()).toEqual([
      {
        payload: { type: 'EntityChanged', entity: 'transcript_segment', action: 'updated', id: null, meeting_id: m1 },
        origin_client_id: clientId,
      },
      {
        payload: { type: 'EntityChanged', entity: 'person', action: 'updated', id: p, meeting_id: null },
        origin_client_id: clientId,
      },
    ]);

    // New segments of the label are no longer attributed; the last assignment going leaves no model.
    await append(t1, [{ speaker_label: 'SPEAKER 1/ü', feature_vector: v[0] }]);
    await expectModelOf(p, [v[2]]);
    expect((await unassign(m2, 'SPEAKER 1/ü')).status).toBe(204);
    await expectModelOf(p, []);
    expect((await api.request('GET', `/people/${p}`, { token: alice })).body.voice_vector).toBeNull();
  });

  it('should answer 404 problem+json, changing nothing, for no assignment, an unknown or another user’s meeting', async () => {
    const p = await person(alice);
    const m = await api.meeting(alice, 'recording');
    const t = await transcription(alice, m);
    await append(t, [{ speaker_label: 'S0', feature_vector: randomVector() }]);
    await assign(m, 'S0', p);
    const bobMeeting = await api.meeting(bob, 'recording');
    const before = await sql(
      'SELECT person_id, voice_sum::text FROM voice_sample, person WHERE person.id = voice_sample.person_id AND person_id = $1',
      [p],
    );
    for (const [meetingId, label, token] of [
      [m, 'S1', alice],
      [m, 's0', alice],
      [randomUUID(), 'S0', alice],
      [bobMeeting, 'S0', alice],
      [m, 'S0', bob],
    ] as const) {
      const res = await unassign(meetingId, label, token);
      expect(res.status, `${meetingId} ${label}`).toBe(404);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
    }
    expect(
      await sql(
        'SELECT person_id, voice_sum::text FROM voice_sample, person WHERE person.id = voice_sample.person_id AND person_id = $1',
        [p],
      ),
    ).toEqual(before);
    expect(await sql('SELECT person_id FROM meeting_speaker_label WHERE meeting_id = $1', [m])).toEqual([
      { person_id: p },
    ]);
  });

  it('should answer 422 for a bad meeting id or an over-long label, 401 without and 403 with service credentials', async () => {
    const m = await api.meeting(alice, 'recording');
    expect((await unassign('not-a-uuid', 'S0')).status).toBe(422);
    expect((await unassign(m, 'x'.repeat(201))).status).toBe(422);
    expect((await api.request('DELETE', `/meetings/${m}/speaker-labels/S0`)).status).toBe(401);
    expect((await unassign(m, 'S0', api.serviceToken)).status).toBe(403);
  });
});

describe('GET /people/{id}/voice-samples', () => {
  it('should list the samples newest first, page by page, with meeting, segment and label', async () => {
    const p = await person(alice);
    const m = await api.meeting(alice, 'recording');
    const t = await transcription(alice, m);
    await append(
      t,
      Array.from({ length: 5 }, () => ({ speaker_label: 'OLD', feature_vector: randomVector() })),
    );
    await assign(m, 'OLD', p);
    await append(t, [
      { speaker_label: 'NEW', feature_vector: randomVector() },
      { speaker_label: 'NEW', feature_vector: null },
    ]);
    await assign(m, 'NEW', p);
    const segs = await sql(
      'SELECT id, speaker_label FROM transcript_segment WHERE transcription_id = $1 AND feature_vector IS NOT NULL',
      [t],
    );

    const seen: any[] = [];
    let cursor: string | null = null;
    do {
      const res = await samples(p, `?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      expect(res.body.items.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.items);
      cursor = res.body.next_cursor as string | null;
    } while (cursor);
    expect(seen).toHaveLength(6);
    expect(new Set(seen.map((s) => s.segment_id))).toEqual(new Set(segs.map((s) => s.id)));
    expect(seen[0]).toEqual({
      meeting_id: m,
      segment_id: expect.any(String),
      speaker_label: 'NEW',
      created_at: expect.any(String),
    });
    expect(seen.slice(1).every((s) => s.speaker_label === 'OLD')).toBe(true);
    const times = seen.map((s) => Date.parse(s.created_at));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
  });

  it('should answer 404 for an unknown or another user’s person, 400 for a bad cursor, 422 for a bad limit', async () => {
    const p = await person(alice);
    expect((await samples(p)).body).toEqual({ items: [], next_cursor: null });
    for (const [id, token] of [
      [randomUUID(), alice],
      [p, bob],
    ]) {
      const res = await samples(id, '', token);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
    }
    expect((await samples(p, '?cursor=abc')).status).toBe(400);
    expect((await samples(p, `?cursor=${Buffer.from('["x","y"]').toString('base64url')}`)).status).toBe(400);
    expect((await samples(p, '?limit=0')).status).toBe(422);
    expect((await samples('nope')).status).toBe(422);
    expect((await api.request('GET', `/people/${p}/voice-samples`)).status).toBe(401);
  });
});

describe('removeMeetingVoiceSamples', () => {
  it("should remove the meetings' samples and recompute the people in the caller's transaction", async () => {
    const [p, q] = [await person(alice), await person(alice)];
    const [m1, m2, m3] = [
      await api.meeting(alice, 'recording'),
      await api.meeting(alice, 'recording'),
      await api.meeting(alice, 'recording'),
    ];
    const v = [randomVector(), randomVector(), randomVector(), randomVector()];
    for (const [m, vs] of [
      [m1, [v[0]]],
      [m2, [v[1]]],
      [m3, [v[2], v[3]]],
    ] as const) {
      await append(
        await transcription(alice, m),
        vs.map((fv) => ({ speaker_label: 'S', feature_vector: fv })),
      );
    }
    await assign(m1, 'S', p);
    await assign(m2, 'S', q);
    await assign(m3, 'S', p);

    // Rolled back with its transaction: nothing changes.
    await expect(
      api.rt.db.withTransaction(async (tx) => {
        await removeMeetingVoiceSamples(tx, [m1]);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    await expectModelOf(p, [v[0], v[2], v[3]]);

    const changed = await api.rt.db.withTransaction((tx) => removeMeetingVoiceSamples(tx, [m1, m2]));
    expect(changed.sort()).toEqual([p, q].sort());
    await expectModelOf(p, [v[2], v[3]]);
    await expectModelOf(q, []);
    expect(await sql('SELECT count(*)::int AS n FROM voice_sample WHERE meeting_id = ANY($1)', [[m1, m2]])).toEqual([
      { n: 0 },
    ]);
    expect(await api.rt.db.withTransaction((tx) => removeMeetingVoiceSamples(tx, []))).toEqual([]);
  });
});
