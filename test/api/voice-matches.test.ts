import { randomUUID } from 'node:crypto';
import pgvector from 'pgvector';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let alice: string;
let bob: string;
let aliceId: string;
let bobId: string;

let seed = 7;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
const randomVector = () => Array.from({ length: 192 }, rand);
const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const cosine = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i], 0) / (norm(a) * norm(b));

/** Inserts people with voice vectors directly (the vectors normally come from label assignment). */
async function peopleWithVoices(userId: string, vectors: (number[] | null)[]): Promise<string[]> {
  const { rows } = await api.rt.db.query<{ id: string }>(
    'test.people',
    `INSERT INTO person (user_id, display_name, voice_vector, voice_model_status)
     SELECT $1, 'v-' || gen_random_uuid(), v::vector, CASE WHEN v IS NULL THEN 'untrained' ELSE 'ready' END
     FROM unnest($2::text[]) WITH ORDINALITY AS u(v, o) ORDER BY o RETURNING id`,
    [userId, vectors.map((v) => (v ? pgvector.toSql(v) : null))],
  );
  return rows.map((r) => r.id);
}
const match = (token: string, body: unknown) => api.request('POST', '/people/voice-matches', { token, body });

let aliceVectors: number[][];
let aliceIds: string[];
let untrained: string;

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('alice');
  bob = await api.token('bob');
  aliceId = (await api.request('GET', '/me', { token: alice })).body.id;
  bobId = (await api.request('GET', '/me', { token: bob })).body.id;
  aliceVectors = Array.from({ length: 40 }, randomVector);
  aliceIds = await peopleWithVoices(aliceId, aliceVectors);
  [untrained] = await peopleWithVoices(aliceId, [null]);
});
afterAll(() => api?.close());
afterEach(() => vi.restoreAllMocks());

describe('POST /people/voice-matches', () => {
  it('should return the person whose voice is nearest first, then the rest by cosine similarity', async () => {
    const target = 17;
    const query = aliceVectors[target].map((x) => x * 3 + rand() * 0.05);
    // Bob has the exact vector; it must not leak into alice's matches.
    await peopleWithVoices(bobId, [aliceVectors[target], query]);

    const res = await match(alice, { feature_vector: query, limit: 5 });
    expect(res.status).toBe(200);
    expect(res.body.items).toHaveLength(5);
    expect(res.body.items[0].person.id).toBe(aliceIds[target]);
    expect(res.body.items[0].similarity).toBeGreaterThan(0.99);

    const exact = aliceIds
      .map((id, i) => ({ id, similarity: cosine(query, aliceVectors[i]) }))
      .sort((a, b) => b.similarity - a.similarity);
    expect(res.body.items.map((m) => m.person.id)).toEqual(exact.slice(0, 5).map((e) => e.id));
    for (const [i, m] of (res.body.items as { similarity: number }[]).entries())
      expect(m.similarity).toBeCloseTo(exact[i].similarity, 5);
    for (const m of res.body.items) {
      expect(m.person.user_id).toBe(aliceId);
      expect(m.person).not.toHaveProperty('voice_vector');
      expect(m.person.voice_model_status).toBe('ready');
    }
  });

  it('should default to 10 matches and skip people without a voice vector', async () => {
    const res = await match(alice, { feature_vector: randomVector() });
    expect(res.body.items).toHaveLength(10);
    const all = await match(alice, { feature_vector: randomVector(), limit: 100 });
    expect(all.body.items).toHaveLength(40);
    expect(all.body.items.map((m) => m.person.id)).not.toContain(untrained);
    const sims = all.body.items.map((m) => m.similarity);
    expect(sims).toEqual([...sims].sort((a, b) => b - a));
  });

  it('should answer an empty list to a user without voices', async () => {
    const res = await match(await api.token('carol'), { feature_vector: randomVector() });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [] });
  });

  it('should reject bad vectors and limits with 422 before any SQL', async () => {
    const spy = vi.spyOn(api.rt.db, 'query');
    const tx = vi.spyOn(api.rt.db, 'withTransaction');
    const v = randomVector();
    const cases: [string, string][] = [
      ['191 dimensions', JSON.stringify({ feature_vector: v.slice(1) })],
      ['193 dimensions', JSON.stringify({ feature_vector: [...v, 1] })],
      ['Infinity', `{"feature_vector":[1e999${',0.1'.repeat(191)}]}`],
      ['beyond float4', JSON.stringify({ feature_vector: [1e39, ...v.slice(1)] })],
      ['all zeros', JSON.stringify({ feature_vector: Array(192).fill(0) })],
      ['strings', JSON.stringify({ feature_vector: v.map(String) })],
      ['null element', JSON.stringify({ feature_vector: [null, ...v.slice(1)] })],
      ['missing', JSON.stringify({ limit: 3 })],
      ['limit 0', JSON.stringify({ feature_vector: v, limit: 0 })],
      ['limit 101', JSON.stringify({ feature_vector: v, limit: 101 })],
      ['limit 1.5', JSON.stringify({ feature_vector: v, limit: 1.5 })],
      ['extra field', JSON.stringify({ feature_vector: v, user_id: bobId })],
    ];
    for (const [name, body] of cases) {
      const res = await match(alice, body);
      expect(res.status, name).toBe(422);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
    }
    expect(tx).not.toHaveBeenCalled();
    expect(spy.mock.calls.map((c) => c[0]).filter((name) => !name.startsWith('user.'))).toEqual([]);
    // NaN is not JSON at all.
    expect((await match(alice, `{"feature_vector":[NaN${',0.1'.repeat(191)}]}`)).status).toBe(400);
  });

  it('should answer 401 without credentials and 403 to the service scheme', async () => {
    expect(
      (await api.request('POST', '/people/voice-matches', { body: { feature_vector: randomVector() } })).status,
    ).toBe(401);
    expect((await match(api.serviceToken, { feature_vector: randomVector() })).status).toBe(403);
  });

  it('should find a person whose voice was built by a speaker-label assignment', async () => {
    const person = (
      await api.request('POST', '/people', {
        token: alice,
        body: { display_name: 'Speaker' },
        headers: { 'idempotency-key': randomUUID() },
      })
    ).body.id;
    const meeting = (
      await api.request('POST', '/meetings', {
        token: alice,
        body: { title: 'm', source_type: 'recording' },
        headers: { 'idempotency-key': randomUUID() },
      })
    ).body.id;
    const [t] = (
      await api.rt.db.query(
        'test.t',
        `INSERT INTO transcription (meeting_id, status) VALUES ($1, 'completed') RETURNING id`,
        [meeting],
      )
    ).rows;
    const voice = randomVector();
    for (let i = 0; i < 3; i++) {
      const noisy = voice.map((x) => x + rand() * 0.1);
      await api.rt.db.query(
        'test.seg',
        `INSERT INTO transcript_segment (transcription_id, speaker_label, text, start_ms, feature_vector) VALUES ($1, 'S9', 'x', $2, $3)`,
        [t.id, i, pgvector.toSql(noisy)],
      );
    }
    const assigned = await api.request('POST', `/meetings/${meeting}/speaker-labels`, {
      token: alice,
      body: { speaker_label: 'S9', person_id: person },
      headers: { 'idempotency-key': randomUUID() },
    });
    expect(assigned.status).toBe(200);
    const res = await match(alice, { feature_vector: voice.map((x) => x + rand() * 0.1), limit: 1 });
    expect(res.body.items.map((m) => m.person.id)).toEqual([person]);
  });
});
