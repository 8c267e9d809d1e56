// GET /meetings/{id}/speaker-labels (decisions.md section 7, "People and speakers"): every label
// of the meeting, assigned or not, and suggestions for the unassigned ones from the user's voices.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let alice: string;
let bob: string;

let seed = 17;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const unit = (v: number[]) => v.map((x) => x / norm(v));
const randomUnit = () => unit(Array.from({ length: 192 }, rand));
/** A voice `noise` away from `centre` (cosine about 1 / sqrt(1 + noise²)). */
const near = (centre: number[], noise: number) =>
  unit(centre.map((x) => x + (rand() * noise * Math.sqrt(3)) / Math.sqrt(192)));
const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i], 0);

type Seg = { speaker_label?: string; feature_vector?: number[]; text?: string };
let at = 0;
async function meetingWith(token: string, segs: Seg[]): Promise<string> {
  const m = await api.meeting(token, 'recording');
  const t = (await api.post(token, `/meetings/${m}/transcriptions`)).body.id;
  const res = await api.request('POST', `/transcriptions/${t}/segments`, {
    token: api.serviceToken,
    body: { segments: segs.map((s) => ({ text: 'x', start_ms: at++, ...s })) },
  });
  expect(res.status).toBe(204);
  return m;
}
/** A person of the user whose voice model is built from these embeddings (through an assignment). */
async function voiced(token: string, name: string, voices: number[][]): Promise<string> {
  const p = (await api.post(token, '/people', { display_name: name })).body.id;
  const m = await meetingWith(
    token,
    voices.map((feature_vector) => ({ speaker_label: 'V', feature_vector })),
  );
  expect((await api.post(token, `/meetings/${m}/speaker-labels`, { speaker_label: 'V', person_id: p })).status).toBe(
    200,
  );
  return p;
}
const labels = (m: string, token = alice) => api.request('GET', `/meetings/${m}/speaker-labels`, { token });

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('alice');
  bob = await api.token('bob');
});
afterAll(() => api?.close());

describe('GET /meetings/{id}/speaker-labels', () => {
  it('should list every label with its person, and suggest the closest voices for unassigned ones', async () => {
    const [ada, grace] = [randomUnit(), randomUnit()];
    // Four people sound like Ada, to different degrees; one like Grace; one like nobody here.
    const adas = [
      await voiced(alice, 'Ada', [near(ada, 0.2), near(ada, 0.2)]),
      await voiced(alice, 'Ada B', [near(ada, 0.6)]),
      await voiced(alice, 'Ada C', [near(ada, 0.9)]),
      await voiced(alice, 'Ada D', [near(ada, 1.2)]),
    ];
    const g = await voiced(alice, 'Grace', [near(grace, 0.2)]);
    await voiced(alice, 'Other', [randomUnit()]);
    // Bob's person has Ada's exact voice: never suggested to Alice.
    await voiced(bob, 'Bob Ada', [ada]);
    const assignedTo = await voiced(alice, 'Assigned', [randomUnit()]);

    const spoken = [near(ada, 0.3), near(ada, 0.3)];
    const m = await meetingWith(alice, [
      { speaker_label: 'SPEAKER_1', feature_vector: spoken[0] },
      { speaker_label: 'SPEAKER_1', feature_vector: spoken[1] },
      { speaker_label: 'SPEAKER_2', feature_vector: near(grace, 0.3) },
      { speaker_label: 'SPEAKER_0', feature_vector: randomUnit() },
      { speaker_label: 'SPEAKER_3', feature_vector: randomUnit() },
      { speaker_label: 'SPEAKER_4' },
      { text: 'no label' },
    ]);
    expect(
      (await api.post(alice, `/meetings/${m}/speaker-labels`, { speaker_label: 'SPEAKER_0', person_id: assignedTo }))
        .status,
    ).toBe(200);

    const res = await labels(m);
    expect(res.status).toBe(200);
    const byLabel = Object.fromEntries(res.body.items.map((i) => [i.speaker_label, i]));
    expect(res.body.items.map((i) => i.speaker_label)).toEqual([
      'SPEAKER_0',
      'SPEAKER_1',
      'SPEAKER_2',
      'SPEAKER_3',
      'SPEAKER_4',
    ]);
    expect(byLabel.SPEAKER_0).toEqual({
      meeting_id: m,
      speaker_label: 'SPEAKER_0',
      person_id: assignedTo,
      segment_count: 1,
      created_at: expect.any(String),
      updated_at: expect.any(String),
      suggestions: [],
    });
    expect(byLabel.SPEAKER_1).toMatchObject({ person_id: null, segment_count: 2, created_at: null, updated_at: null });

    // Up to 3, best first, each at least 0.5 similar: Ada, then the closer of her look-alikes.
    const s1 = byLabel.SPEAKER_1.suggestions;
    expect(s1.length).toBeGreaterThan(0);
    expect(s1.length).toBeLessThanOrEqual(3);
    expect(s1[0]).toEqual({ person_id: adas[0], display_name: 'Ada', similarity: expect.any(Number) });
    expect(s1.map((s) => s.similarity)).toEqual([...s1.map((s) => s.similarity)].sort((a, b) => b - a));
    for (const s of s1) {
      expect(adas).toContain(s.person_id);
      expect(s.similarity).toBeGreaterThanOrEqual(0.5);
      // Compared with the label's voice: the mean of its normalised embeddings.
      const voice = (await api.request('GET', `/people/${s.person_id}`, { token: alice })).body.voice_vector;
      expect(dot(voice!, unit(spoken[0].map((x, i) => x + spoken[1][i])))).toBeCloseTo(s.similarity, 5);
    }
    expect(s1.some((s) => s.person_id === adas[3])).toBe(false);
    expect(byLabel.SPEAKER_2.suggestions.map((s) => s.person_id)).toEqual([g]);
    // A voice like nobody's, and a label without embeddings: no suggestion.
    expect(byLabel.SPEAKER_3.suggestions).toEqual([]);
    expect(byLabel.SPEAKER_4).toMatchObject({ person_id: null, segment_count: 1, suggestions: [] });
  });

  it('should list a meeting without segments as empty', async () => {
    const m = await api.meeting(alice, 'recording');
    expect((await labels(m)).body).toEqual({ items: [] });
  });

  it("should answer 404 for an unknown or another user's meeting and 401 without credentials", async () => {
    const bobs = await meetingWith(bob, [{ speaker_label: 'S' }]);
    for (const m of [bobs, randomUUID()]) {
      const res = await labels(m);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
    }
    expect((await labels('nope')).status).toBe(422);
    expect((await api.request('GET', `/meetings/${bobs}/speaker-labels`)).status).toBe(401);
  });
});
