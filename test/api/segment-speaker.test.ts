// PATCH /transcript-segments/{id} with speaker_label (decisions.md section 7, "People and
// speakers"): the segment moves to that label, takes its person (or none), and its voice sample
// follows.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let alice: string;
let bob: string;
let aliceId: string;

let seed = 3;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
const randomVector = () => Array.from({ length: 192 }, () => rand());
const sql = (text: string, params: unknown[] = []) => api.rt.db.query('test.sql', text, params).then((r) => r.rows);
const person = async () =>
  (await api.post(alice, '/people', { display_name: `p-${randomUUID().slice(0, 8)}` })).body.id as string;
const patch = (id: string, body: unknown, token = alice) =>
  api.request('PATCH', `/transcript-segments/${id}`, { token, body });
const model = async (p: string) =>
  (await sql('SELECT voice_sample_count AS n, voice_model_status AS status FROM person WHERE id = $1', [p]))[0];
const sampleOf = async (segment: string) =>
  (await sql('SELECT person_id, speaker_label FROM voice_sample WHERE segment_id = $1', [segment]))[0] ?? null;

/** A meeting whose labels A and B are assigned to two people and C is not; one segment with an embedding per label. */
async function fixture() {
  const [pa, pb] = [await person(), await person()];
  const m = await api.meeting(alice, 'recording');
  const t = (await api.post(alice, `/meetings/${m}/transcriptions`)).body.id;
  const segments = ['A', 'B', 'C', 'A'].map((speaker_label, i) => ({
    speaker_label,
    text: `s${i}`,
    start_ms: i * 1000,
    feature_vector: randomVector(),
  }));
  expect(
    (await api.request('POST', `/transcriptions/${t}/segments`, { token: api.serviceToken, body: { segments } }))
      .status,
  ).toBe(204);
  for (const [label, p] of [
    ['A', pa],
    ['B', pb],
  ]) {
    expect(
      (await api.post(alice, `/meetings/${m}/speaker-labels`, { speaker_label: label, person_id: p })).status,
    ).toBe(200);
  }
  const ids = (await sql('SELECT id FROM transcript_segment WHERE transcription_id = $1 ORDER BY start_ms', [t])).map(
    (r) => r.id as string,
  );
  return { m, t, pa, pb, ids };
}

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('alice');
  bob = await api.token('bob');
  aliceId = await api.userId(alice);
});
afterAll(() => api?.close());

describe('PATCH /transcript-segments/{id} with speaker_label', () => {
  it('should move the segment to an assigned label: its person and its voice sample follow', async () => {
    const { m, pa, pb, ids } = await fixture();
    expect(await model(pa)).toEqual({ n: 2, status: 'ready' });
    const res = await patch(ids[0], { speaker_label: 'B' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: ids[0], speaker_label: 'B', person_id: pb, text: 's0' });
    expect(await sampleOf(ids[0])).toEqual({ person_id: pb, speaker_label: 'B' });
    expect(await model(pa)).toEqual({ n: 1, status: 'ready' });
    expect(await model(pb)).toEqual({ n: 2, status: 'ready' });
    const events = await api.lastEvents(aliceId, 3);
    expect(events[0]).toMatchObject({ entity: 'transcript_segment', action: 'updated', id: ids[0], meeting_id: m });
    expect(
      events
        .slice(1)
        .map((e) => [e.entity, e.id])
        .sort(),
    ).toEqual(
      [
        ['person', pa],
        ['person', pb],
      ].sort(),
    );
    // The assignments stay as they were.
    expect(
      await sql(
        'SELECT speaker_label, person_id FROM meeting_speaker_label WHERE meeting_id = $1 ORDER BY speaker_label',
        [m],
      ),
    ).toEqual([
      { speaker_label: 'A', person_id: pa },
      { speaker_label: 'B', person_id: pb },
    ]);
  });

  it('should leave the segment without a person (and drop its sample) on an unassigned label, and record one back', async () => {
    const { pa, ids } = await fixture();
    const res = await patch(ids[3], { speaker_label: 'C', text: 'corrected' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ speaker_label: 'C', person_id: null, text: 'corrected' });
    expect(await sampleOf(ids[3])).toBeNull();
    expect(await model(pa)).toEqual({ n: 1, status: 'ready' });

    // The other way: a segment of the unassigned label moves to A and becomes A's person's sample.
    expect((await patch(ids[2], { speaker_label: 'A' })).body).toMatchObject({ speaker_label: 'A', person_id: pa });
    expect(await sampleOf(ids[2])).toEqual({ person_id: pa, speaker_label: 'A' });
    expect(await model(pa)).toEqual({ n: 2, status: 'ready' });
  });

  it("should answer 422 for a label not in the segment's meeting, and 404 for another user's or an unknown segment, changing nothing", async () => {
    const { pa, ids } = await fixture();
    const elsewhere = await api.meeting(alice, 'recording');
    const t = (await api.post(alice, `/meetings/${elsewhere}/transcriptions`)).body.id;
    await api.request('POST', `/transcriptions/${t}/segments`, {
      token: api.serviceToken,
      body: { segments: [{ speaker_label: 'ELSEWHERE', text: 'x', start_ms: 0 }] },
    });
    for (const speaker_label of ['NOPE', 'ELSEWHERE', 'a']) {
      const res = await patch(ids[0], { speaker_label, text: 'not applied' });
      expect(res.status, speaker_label).toBe(422);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.body.errors).toEqual([{ path: 'speaker_label', message: expect.any(String) }]);
    }
    for (const body of [{ speaker_label: '' }, { speaker_label: null }, { speaker_label: 5 }])
      expect((await patch(ids[0], body)).status).toBe(422);
    expect((await patch(ids[0], { speaker_label: 'B' }, bob)).status).toBe(404);
    expect((await patch(randomUUID(), { speaker_label: 'B' })).status).toBe(404);
    expect(await sql('SELECT speaker_label, person_id, text FROM transcript_segment WHERE id = $1', [ids[0]])).toEqual([
      { speaker_label: 'A', person_id: pa, text: 's0' },
    ]);
    expect(await sampleOf(ids[0])).toEqual({ person_id: pa, speaker_label: 'A' });
  });
});
