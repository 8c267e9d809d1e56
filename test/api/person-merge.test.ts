// POST /people/{id}/merge (decisions.md section 7, "People and speakers"): everything of the
// other person moves, the voice model is recounted from all samples, the other is deleted.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let alice: string;
let bob: string;
let aliceId: string;

let seed = 11;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
const randomVector = () => Array.from({ length: 192 }, () => rand() * (1 + Math.abs(rand()) * 3));
const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const normalize = (v: number[]) => v.map((x) => x / norm(v));
const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i], 0);
const sumOf = (vs: number[][]) => vs.reduce((s, v) => s.map((x, i) => x + v[i]), Array(192).fill(0));

const sql = (text: string, params: unknown[] = []) => api.rt.db.query('test.sql', text, params).then((r) => r.rows);
const person = async (token: string, fields: Record<string, unknown> = {}) =>
  (await api.post(token, '/people', { display_name: `p-${randomUUID().slice(0, 8)}`, ...fields })).body.id as string;
const transcription = async (meetingId: string) =>
  (await api.post(alice, `/meetings/${meetingId}/transcriptions`)).body.id as string;
let at = 0;
const append = (t: string, segs: { speaker_label: string; feature_vector?: number[]; person_id?: string }[]) =>
  api.request('POST', `/transcriptions/${t}/segments`, {
    token: api.serviceToken,
    body: { segments: segs.map((s) => ({ text: 'x', start_ms: at++, ...s })) },
  });
const assign = (m: string, speaker_label: string, person_id: string) =>
  api.request('POST', `/meetings/${m}/speaker-labels`, {
    token: alice,
    body: { speaker_label, person_id },
    headers: { 'idempotency-key': randomUUID() },
  });
const merge = (
  into: string,
  body: unknown,
  opts: { token?: string; key?: string; headers?: Record<string, string> } = {},
) =>
  api.request('POST', `/people/${into}/merge`, {
    token: opts.token ?? alice,
    body,
    headers: { 'idempotency-key': opts.key ?? randomUUID(), ...opts.headers },
  });

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('alice');
  bob = await api.token('bob');
  aliceId = await api.userId(alice);
});
afterAll(() => api?.close());

describe('POST /people/{id}/merge', () => {
  it('should move everything of the other person in one request and delete it', async () => {
    const keep = await person(alice, { email: 'keep@example.com' });
    const other = await person(alice, { full_name: 'Ada Lovelace', email: 'other@example.com', company: 'Engines' });
    const [m1, m2] = [await api.meeting(alice, 'recording'), await api.meeting(alice, 'recording')];
    const [t1, t2] = [await transcription(m1), await transcription(m2)];
    const keepVoice = [randomVector(), randomVector()];
    const otherVoice = [randomVector(), randomVector(), randomVector()];
    expect(
      (
        await append(t1, [
          { speaker_label: 'A', feature_vector: keepVoice[0] },
          { speaker_label: 'A', feature_vector: keepVoice[1] },
          { speaker_label: 'B', feature_vector: otherVoice[0] },
        ])
      ).status,
    ).toBe(204);
    // The ML service attributed one segment to the other person itself (no assignment).
    expect(
      (
        await append(t2, [
          { speaker_label: 'B', feature_vector: otherVoice[1] },
          { speaker_label: 'C', feature_vector: otherVoice[2], person_id: other },
        ])
      ).status,
    ).toBe(204);
    expect((await assign(m1, 'A', keep)).status).toBe(200);
    expect((await assign(m1, 'B', other)).status).toBe(200);
    expect((await assign(m2, 'B', other)).status).toBe(200);

    const task = (await api.post(alice, '/tasks', { content: 'follow up', assigned_to: other })).body.id;
    const note = (await api.post(alice, '/notes', { content: 'likes tea', subject_type: 'PERSON', subject_id: other }))
      .body.id;
    const [{ id: subTask }] = await sql(
      `INSERT INTO sub_task (task_id, content, assigned_to) VALUES ($1, 'part', $2) RETURNING id`,
      [task, other],
    );
    const [{ id: thread }] = await sql(
      `INSERT INTO ai_thread (user_id, context_type, context_id) VALUES ($1, 'PERSON', $2) RETURNING id`,
      [aliceId, other],
    );
    const [{ id: summary }] = await sql(
      `INSERT INTO person_summary (person_id, author_id, summary) VALUES ($1, $2, 'kind') RETURNING id`,
      [other, aliceId],
    );
    await sql('INSERT INTO meeting_attendee (meeting_id, person_id) VALUES ($1, $2), ($1, $3), ($4, $3)', [
      m1,
      keep,
      other,
      m2,
    ]);
    expect((await api.request('PUT', '/me/person', { token: alice, body: { person_id: other } })).status).toBe(200);

    const clientId = randomUUID();
    const res = await merge(keep, { person_id: other }, { headers: { 'x-client-id': clientId } });
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toBeTruthy();
    // Its own values stay; its empty fields take the other's.
    expect(res.body).toMatchObject({
      id: keep,
      email: 'keep@example.com',
      full_name: 'Ada Lovelace',
      company: 'Engines',
      voice_model_status: 'ready',
    });

    const all = [...keepVoice, ...otherVoice];
    const expected = normalize(sumOf(all.map(normalize)));
    expect(dot(res.body.voice_vector!, expected)).toBeGreaterThan(0.999999);
    expect(res.body.voice_confidence).toBeCloseTo(
      all.map(normalize).reduce((s, v) => s + dot(v, expected), 0) / all.length,
      5,
    );
    expect(await sql('SELECT voice_sample_count AS n FROM person WHERE id = $1', [keep])).toEqual([{ n: 5 }]);
    expect(await sql('SELECT count(*)::int AS n FROM voice_sample WHERE person_id = $1', [keep])).toEqual([{ n: 5 }]);

    expect(
      await sql(
        'SELECT count(*)::int AS n FROM transcript_segment WHERE transcription_id = ANY($1) AND person_id IS DISTINCT FROM $2',
        [[t1, t2], keep],
      ),
    ).toEqual([{ n: 0 }]);
    expect(
      await sql(
        'SELECT meeting_id, speaker_label, person_id FROM meeting_speaker_label WHERE meeting_id = ANY($1) ORDER BY meeting_id = $2 DESC, speaker_label',
        [[m1, m2], m1],
      ),
    ).toEqual([
      { meeting_id: m1, speaker_label: 'A', person_id: keep },
      { meeting_id: m1, speaker_label: 'B', person_id: keep },
      { meeting_id: m2, speaker_label: 'B', person_id: keep },
    ]);
    expect(await sql('SELECT assigned_to FROM task WHERE id = $1', [task])).toEqual([{ assigned_to: keep }]);
    expect(await sql('SELECT assigned_to FROM sub_task WHERE id = $1', [subTask])).toEqual([{ assigned_to: keep }]);
    expect(await sql('SELECT subject_id FROM note WHERE id = $1', [note])).toEqual([{ subject_id: keep }]);
    expect(await sql('SELECT context_id FROM ai_thread WHERE id = $1', [thread])).toEqual([{ context_id: keep }]);
    expect(await sql('SELECT person_id FROM person_summary WHERE id = $1', [summary])).toEqual([{ person_id: keep }]);
    expect(
      await sql('SELECT meeting_id FROM meeting_attendee WHERE person_id = $1 ORDER BY meeting_id = $2 DESC', [
        keep,
        m1,
      ]),
    ).toEqual([{ meeting_id: m1 }, { meeting_id: m2 }]);
    expect((await api.request('GET', '/me', { token: alice })).body.person_id).toBe(keep);
    expect((await api.request('GET', `/people/${other}`, { token: alice })).status).toBe(404);

    const events = await sql(
      'SELECT payload, origin_client_id FROM event_outbox WHERE user_id = $1 ORDER BY seq DESC LIMIT 3',
      [aliceId],
    );
    expect(events.reverse()).toEqual([
      {
        payload: { type: 'EntityChanged', entity: 'person', action: 'updated', id: keep, meeting_id: null },
        origin_client_id: clientId,
      },
      {
        payload: { type: 'EntityChanged', entity: 'person', action: 'deleted', id: other, meeting_id: null },
        origin_client_id: clientId,
      },
      {
        payload: { type: 'EntityChanged', entity: 'user', action: 'updated', id: aliceId, meeting_id: null },
        origin_client_id: clientId,
      },
    ]);

    // The moved assignment keeps working: a later segment of the label is the kept person's.
    expect((await append(t2, [{ speaker_label: 'B', feature_vector: randomVector() }])).status).toBe(204);
    expect(await sql('SELECT count(*)::int AS n FROM voice_sample WHERE person_id = $1', [keep])).toEqual([{ n: 6 }]);
  });

  it('should merge a person without samples into one with samples and keep the model', async () => {
    const keep = await person(alice);
    const other = await person(alice);
    const m = await api.meeting(alice, 'recording');
    const v = randomVector();
    await append(await transcription(m), [{ speaker_label: 'S', feature_vector: v }]);
    await assign(m, 'S', keep);
    const before = (await api.request('GET', `/people/${keep}`, { token: alice })).body;
    const res = await merge(keep, { person_id: other });
    expect(res.status).toBe(200);
    expect(dot(res.body.voice_vector!, before.voice_vector!)).toBeGreaterThan(0.999999);
    expect(res.body.voice_confidence).toBe(before.voice_confidence);
  });

  it('should replay the first answer for the same Idempotency-Key, and refuse the key with another body', async () => {
    const keep = await person(alice);
    const other = await person(alice);
    const key = randomUUID();
    const first = await merge(keep, { person_id: other }, { key });
    expect(first.status).toBe(200);
    const again = await merge(keep, { person_id: other }, { key });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
    expect((await merge(keep, { person_id: randomUUID() }, { key })).status).toBe(422);
    // Without the key the same merge is a new request: the other person is gone now.
    expect((await merge(keep, { person_id: other })).status).toBe(404);
  });
});

describe('POST /people/{id}/merge: errors change nothing', () => {
  const count = async (p: string) => (await sql('SELECT count(*)::int AS n FROM person WHERE id = $1', [p]))[0].n;

  it('should answer 422 for a merge into itself', async () => {
    const p = await person(alice);
    const res = await merge(p, { person_id: p });
    expect(res.status).toBe(422);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.body.errors).toEqual([{ path: 'person_id', message: expect.any(String) }]);
    expect(await count(p)).toBe(1);
  });

  it("should answer 404 when either person is unknown or another user's", async () => {
    const mine = await person(alice);
    const other = await person(alice);
    const bobs = await person(bob);
    for (const [into, from] of [
      [mine, randomUUID()],
      [randomUUID(), mine],
      [mine, bobs],
      [bobs, mine],
    ]) {
      const res = await merge(into, { person_id: from });
      expect(res.status, `${into} <- ${from}`).toBe(404);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
    }
    expect((await merge(other, { person_id: mine }, { token: bob })).status).toBe(404);
    for (const p of [mine, other, bobs]) expect(await count(p)).toBe(1);
  });

  it('should validate the body and require an Idempotency-Key', async () => {
    const p = await person(alice);
    const q = await person(alice);
    for (const body of [{}, { person_id: 'x' }, { person_id: null }, { person_id: q, extra: 1 }]) {
      expect((await merge(p, body)).status, JSON.stringify(body)).toBe(422);
    }
    expect((await merge(p, '{"person_id":')).status).toBe(400);
    expect((await merge('nope', { person_id: q })).status).toBe(422);
    expect((await api.request('POST', `/people/${p}/merge`, { token: alice, body: { person_id: q } })).status).toBe(
      400,
    );
    expect(
      (
        await api.request('POST', `/people/${p}/merge`, {
          body: { person_id: q },
          headers: { 'idempotency-key': randomUUID() },
        })
      ).status,
    ).toBe(401);
    expect((await merge(p, { person_id: q }, { token: api.serviceToken })).status).toBe(403);
    expect(await count(q)).toBe(1);
  });
});
