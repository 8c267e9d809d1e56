import type { QueryResultRow } from 'pg';
import { randomUUID } from 'node:crypto';
import pgvector from 'pgvector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applySpeakerLabels } from '@mi/lib/repositories/speaker-label-reapply';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let alice: string;
let bob: string;
let aliceId: string;

// Deterministic pseudo-random embeddings with varied magnitudes, so a missing per-vector
// normalisation changes the expected result.
let seed = 42;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
const randomVector = (scale = 1 + Math.abs(rand()) * 4) => Array.from({ length: 192 }, () => rand() * scale);
const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const normalize = (v: number[]) => v.map((x) => x / norm(v));
const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i], 0);
const sumOf = (vs: number[][]) => vs.reduce((s, v) => s.map((x, i) => x + v[i]), Array(192).fill(0));
const meanOfNormalized = (vs: number[][]) => normalize(sumOf(vs.map(normalize)));

const sql = <R extends QueryResultRow = Record<string, unknown>>(text: string, params: unknown[] = []) =>
  api.rt.db.query<R>('test.sql', text, params).then((r) => r.rows);

const meeting = (token: string) => api.meeting(token, 'recording');
// Through POST /people with the owner's token, unlike api.person's direct insert.
async function person(token: string, name = `p-${randomUUID().slice(0, 8)}`): Promise<string> {
  return (await api.post(token, '/people', { display_name: name })).body.id;
}
async function transcription(meetingId: string): Promise<string> {
  return (
    await sql<{ id: string }>(`INSERT INTO transcription (meeting_id, status) VALUES ($1, 'completed') RETURNING id`, [
      meetingId,
    ])
  )[0].id;
}
/** Inserts segments [label, feature_vector | null] and returns their ids in order. */
async function segments(transcriptionId: string, segs: [string, number[] | null][]): Promise<string[]> {
  const rows = await sql<{ id: string }>(
    `INSERT INTO transcript_segment (transcription_id, speaker_label, text, start_ms, feature_vector)
     SELECT $1, l, 'text', o * 1000, v::vector FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS u(l, v, o) ORDER BY o RETURNING id`,
    [transcriptionId, segs.map((s) => s[0]), segs.map((s) => (s[1] ? pgvector.toSql(s[1]) : null))],
  );
  return rows.map((r) => r.id);
}
const assign = (
  token: string,
  meetingId: string,
  body: unknown,
  key: string = randomUUID(),
  headers: Record<string, string> = {},
) =>
  api.request('POST', `/meetings/${meetingId}/speaker-labels`, {
    token,
    body,
    headers: { 'idempotency-key': key, ...headers },
  });
const getPerson = async (id: string) => (await api.request('GET', `/people/${id}`, { token: alice })).body;
const expectVectorClose = (actual: number[], expected: number[]) => {
  expect(actual).toHaveLength(192);
  for (let i = 0; i < 192; i++) expect(actual[i]).toBeCloseTo(expected[i], 5);
};

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('alice');
  bob = await api.token('bob');
  aliceId = await api.userId(alice);
});
afterAll(() => api?.close());

describe('POST /meetings/{id}/speaker-labels', () => {
  it('should relabel every matching segment of every transcription and set the normalised mean voice vector', async () => {
    const m = await meeting(alice);
    const [t1, t2] = [await transcription(m), await transcription(m)];
    const vs = [randomVector(), randomVector(), randomVector()];
    const s1 = await segments(t1, [
      ['S0', vs[0]],
      ['S1', randomVector()],
      ['S0', vs[1]],
      ['S0', null],
    ]);
    const s2 = await segments(t2, [
      ['S0', vs[2]],
      ['S0', Array(192).fill(0)],
    ]);
    const p = await person(alice);

    const clientId = randomUUID();
    const res = await assign(alice, m, { speaker_label: 'S0', person_id: p }, randomUUID(), {
      'x-client-id': clientId,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ updated_count: 5 });

    const labelled = await sql('SELECT id, person_id FROM transcript_segment WHERE transcription_id = ANY($1)', [
      [t1, t2],
    ]);
    const byId = Object.fromEntries(labelled.map((r) => [r.id, r.person_id]));
    for (const id of [s1[0], s1[2], s1[3], ...s2]) expect(byId[id]).toBe(p);
    expect(byId[s1[1]]).toBeNull();
    expect(await sql('SELECT speaker_label, person_id FROM meeting_speaker_label WHERE meeting_id = $1', [m])).toEqual([
      { speaker_label: 'S0', person_id: p },
    ]);

    // The zero vector and the segment without one do not contribute.
    const expected = meanOfNormalized(vs);
    const got = await getPerson(p);
    expect(got.voice_model_status).toBe('ready');
    expectVectorClose(got.voice_vector!, expected);
    const meanCos = vs.map(normalize).reduce((s, v) => s + dot(v, expected), 0) / vs.length;
    expect(got.voice_confidence).toBeCloseTo(meanCos, 5);
    expect((await sql('SELECT voice_sample_count FROM person WHERE id = $1', [p]))[0].voice_sample_count).toBe(3);

    const events = await sql(
      'SELECT payload, origin_client_id FROM event_outbox WHERE user_id = $1 ORDER BY seq DESC LIMIT 2',
      [aliceId],
    );
    expect(events.reverse()).toEqual([
      {
        payload: { type: 'EntityChanged', entity: 'transcript_segment', action: 'updated', id: null, meeting_id: m },
        origin_client_id: clientId,
      },
      {
        payload: { type: 'EntityChanged', entity: 'person', action: 'updated', id: p, meeting_id: null },
        origin_client_id: clientId,
      },
    ]);
  });

  it('should build the voice vector from every sample of the person across meetings (the sum, not a weighted mean)', async () => {
    const p = await person(alice);
    const m1 = await meeting(alice);
    const first = [randomVector(), randomVector()];
    await segments(await transcription(m1), [
      ['A', first[0]],
      ['A', first[1]],
    ]);
    expect((await assign(alice, m1, { speaker_label: 'A', person_id: p })).status).toBe(200);

    const m2 = await meeting(alice);
    const second = [randomVector(), randomVector(), randomVector(), randomVector(), randomVector()];
    await segments(
      await transcription(m2),
      second.map((v) => ['SPEAKER_3', v] as [string, number[]]),
    );
    expect((await assign(alice, m2, { speaker_label: 'SPEAKER_3', person_id: p })).body).toEqual({ updated_count: 5 });

    const all = [...first, ...second];
    const expected = meanOfNormalized(all);
    const got = await getPerson(p);
    expectVectorClose(got.voice_vector!, expected);
    const meanCos = all.map(normalize).reduce((s, v) => s + dot(v, expected), 0) / all.length;
    expect(got.voice_confidence).toBeCloseTo(meanCos, 5);
    expect((await sql('SELECT voice_sample_count FROM person WHERE id = $1', [p]))[0].voice_sample_count).toBe(7);
    expect((await sql('SELECT count(*)::int AS n FROM voice_sample WHERE person_id = $1', [p]))[0].n).toBe(7);
  });

  it('should not count the same embeddings twice when an assignment is repeated', async () => {
    const p = await person(alice);
    const m = await meeting(alice);
    await segments(await transcription(m), [
      ['R', randomVector()],
      ['R', randomVector()],
    ]);
    await assign(alice, m, { speaker_label: 'R', person_id: p });
    const before = await getPerson(p);
    const again = await assign(alice, m, { speaker_label: 'R', person_id: p });
    expect(again.body).toEqual({ updated_count: 2 });
    const after = await getPerson(p);
    expect(after.voice_vector).toEqual(before.voice_vector);
    expect((await sql('SELECT voice_sample_count FROM person WHERE id = $1', [p]))[0].voice_sample_count).toBe(2);
  });

  it('should relabel segments without feature vectors and leave the voice model unchanged', async () => {
    const p = await person(alice);
    const m = await meeting(alice);
    const t = await transcription(m);
    await segments(t, [
      ['X', null],
      ['X', null],
    ]);
    const res = await assign(alice, m, { speaker_label: 'X', person_id: p });
    expect(res.body).toEqual({ updated_count: 2 });
    expect(await sql('SELECT person_id FROM transcript_segment WHERE transcription_id = $1', [t])).toEqual([
      { person_id: p },
      { person_id: p },
    ]);
    expect(await getPerson(p)).toMatchObject({
      voice_vector: null,
      voice_model_status: 'untrained',
      voice_confidence: null,
    });
  });

  it('should move a label to another person', async () => {
    const [p1, p2] = [await person(alice), await person(alice)];
    const m = await meeting(alice);
    const t = await transcription(m);
    await segments(t, [['M', randomVector()]]);
    await assign(alice, m, { speaker_label: 'M', person_id: p1 });
    await assign(alice, m, { speaker_label: 'M', person_id: p2 });
    expect(await sql('SELECT person_id FROM transcript_segment WHERE transcription_id = $1', [t])).toEqual([
      { person_id: p2 },
    ]);
    expect(await sql('SELECT person_id FROM meeting_speaker_label WHERE meeting_id = $1', [m])).toEqual([
      { person_id: p2 },
    ]);
    expect((await getPerson(p2)).voice_model_status).toBe('ready');
    // The sample moved: the first person has none left.
    expect(await getPerson(p1)).toMatchObject({
      voice_vector: null,
      voice_model_status: 'untrained',
      voice_confidence: null,
    });
    expect(
      await sql(
        'SELECT s.person_id FROM voice_sample s JOIN transcript_segment g ON g.id = s.segment_id WHERE g.transcription_id = $1',
        [t],
      ),
    ).toEqual([{ person_id: p2 }]);
  });

  it('should keep the assignment across a segment rebuild', async () => {
    const p = await person(alice);
    const m = await meeting(alice);
    const t = await transcription(m);
    await segments(t, [
      ['S0', randomVector()],
      ['S1', null],
    ]);
    await assign(alice, m, { speaker_label: 'S0', person_id: p });
    // What PUT /transcriptions/{id}/segments does: replace all segments, then re-apply.
    await api.rt.db.withTransaction(async (tx) => {
      await tx.query('test.wipe', 'DELETE FROM transcript_segment WHERE transcription_id = $1', [t]);
      await tx.query(
        'test.insert',
        `INSERT INTO transcript_segment (transcription_id, speaker_label, text, start_ms) VALUES ($1, 'S0', 'a', 0), ($1, 'S0', 'b', 1), ($1, 'S1', 'c', 2)`,
        [t],
      );
      expect(await applySpeakerLabels(tx, t)).toBe(2);
    });
    const rows = await sql(
      'SELECT speaker_label, person_id FROM transcript_segment WHERE transcription_id = $1 ORDER BY start_ms',
      [t],
    );
    expect(rows).toEqual([
      { speaker_label: 'S0', person_id: p },
      { speaker_label: 'S0', person_id: p },
      { speaker_label: 'S1', person_id: null },
    ]);
    const list = await api.request('GET', `/meetings/${m}/speaker-labels`, { token: alice });
    expect(list.status).toBe(200);
    expect(list.body.items).toEqual([
      {
        meeting_id: m,
        speaker_label: 'S0',
        person_id: p,
        segment_count: 2,
        created_at: expect.any(String),
        updated_at: expect.any(String),
        suggestions: [],
      },
      {
        meeting_id: m,
        speaker_label: 'S1',
        person_id: null,
        segment_count: 1,
        created_at: null,
        updated_at: null,
        suggestions: [],
      },
    ]);
  });

  it('should relabel 10,000 segments in one request', async () => {
    const p = await person(alice);
    const m = await meeting(alice);
    const t = await transcription(m);
    const v = normalize(randomVector());
    await sql(
      `INSERT INTO transcript_segment (transcription_id, speaker_label, text, start_ms, feature_vector)
       SELECT $1, CASE WHEN g % 11 = 0 THEN 'OTHER' ELSE 'BIG' END, 'x', g, $2::vector FROM generate_series(1, 11000) g`,
      [t, pgvector.toSql(v)],
    );
    const res = await assign(alice, m, { speaker_label: 'BIG', person_id: p });
    expect(res.body).toEqual({ updated_count: 10_000 });
    expect(
      (
        await sql('SELECT count(*)::int AS n FROM transcript_segment WHERE transcription_id = $1 AND person_id = $2', [
          t,
          p,
        ])
      )[0].n,
    ).toBe(10_000);
    expectVectorClose((await getPerson(p)).voice_vector!, v);
  });
});

describe('errors', () => {
  let m: string;
  let p: string;
  beforeAll(async () => {
    m = await meeting(alice);
    p = await person(alice);
    await segments(await transcription(m), [['S0', randomVector()]]);
  });

  it('should answer 404 for an unknown, deleted or other user meeting', async () => {
    const bobMeeting = await meeting(bob);
    await segments(await transcription(bobMeeting), [['S0', null]]);
    const gone = await meeting(alice);
    await segments(await transcription(gone), [['S0', null]]);
    await api.request('DELETE', `/meetings/${gone}`, { token: alice });
    for (const id of [randomUUID(), gone, bobMeeting]) {
      const res = await assign(alice, id, { speaker_label: 'S0', person_id: p });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
    }
    expect(
      (
        await sql(
          'SELECT count(*)::int AS n FROM transcript_segment s JOIN transcription t ON t.id = s.transcription_id WHERE t.meeting_id = $1 AND s.person_id IS NOT NULL',
          [bobMeeting],
        )
      )[0].n,
    ).toBe(0);
  });

  it("should answer 422 for another user's or an unknown person", async () => {
    const bobsPerson = await person(bob);
    for (const person_id of [bobsPerson, randomUUID()]) {
      const res = await assign(alice, m, { speaker_label: 'S0', person_id });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual([{ path: 'person_id', message: expect.any(String) }]);
    }
    expect(await sql('SELECT 1 FROM meeting_speaker_label WHERE meeting_id = $1', [m])).toHaveLength(0);
  });

  it("should answer 422 for a label not in this meeting's transcript, changing nothing", async () => {
    const other = await meeting(alice);
    await segments(await transcription(other), [['ONLY_ELSEWHERE', randomVector()]]);
    for (const speaker_label of ['NOPE', 'ONLY_ELSEWHERE', 's0']) {
      const res = await assign(alice, m, { speaker_label, person_id: p });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual([{ path: 'speaker_label', message: expect.any(String) }]);
    }
    expect(await sql('SELECT 1 FROM meeting_speaker_label WHERE meeting_id = $1', [m])).toHaveLength(0);
    expect((await getPerson(p)).voice_vector).toBeNull();
  });

  it('should validate the body and require an Idempotency-Key', async () => {
    for (const body of [
      {},
      { speaker_label: 'S0' },
      { person_id: p },
      { speaker_label: '', person_id: p },
      { speaker_label: 'S0', person_id: 'x' },
      { speaker_label: 1, person_id: p },
      { speaker_label: 'S0', person_id: p, extra: 1 },
    ]) {
      expect((await assign(alice, m, body)).status, JSON.stringify(body)).toBe(422);
    }
    expect(
      (
        await api.request('POST', `/meetings/${m}/speaker-labels`, {
          token: alice,
          body: { speaker_label: 'S0', person_id: p },
        })
      ).status,
    ).toBe(400);
    expect((await assign(alice, m, '{"speaker_label":')).status).toBe(400);
    expect((await assign(alice, 'not-a-uuid', { speaker_label: 'S0', person_id: p })).status).toBe(422);
  });

  it('should replay the first response for the same key', async () => {
    const key = randomUUID();
    const first = await assign(alice, m, { speaker_label: 'S0', person_id: p }, key);
    const again = await assign(alice, m, { speaker_label: 'S0', person_id: p }, key);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
  });

  it('should answer 401 without credentials and 403 to the service scheme', async () => {
    expect(
      (
        await api.request('POST', `/meetings/${m}/speaker-labels`, {
          body: { speaker_label: 'S0', person_id: p },
          headers: { 'idempotency-key': randomUUID() },
        })
      ).status,
    ).toBe(401);
    expect((await assign(api.serviceToken, m, { speaker_label: 'S0', person_id: p })).status).toBe(403);
    expect((await api.request('GET', `/meetings/${m}/speaker-labels`, { token: bob })).status).toBe(404);
    expect((await api.request('GET', `/meetings/${m}/speaker-labels`)).status).toBe(401);
  });
});
