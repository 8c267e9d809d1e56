import { randomUUID } from 'node:crypto';
import type { QueryResultRow } from 'pg';
import pgvector from 'pgvector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let alice: string;
let aliceId: string;
let bob: string;
let bobId: string;
let svc: string;

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('alice');
  bob = await api.token('bob');
  aliceId = await api.userId(alice);
  bobId = await api.userId(bob);
  svc = api.serviceToken;
});
afterAll(() => api?.close());

const sql = async <R extends QueryResultRow = Record<string, unknown>>(text: string, params: unknown[] = []) =>
  (await api.rt.db.query<R>('test', text, params)).rows;

async function transcription(token = alice): Promise<{ id: string; meeting_id: string }> {
  const m = await api.meeting(token, 'recording');
  const t = await api.post(token, `/meetings/${m}/transcriptions`);
  expect(t.status).toBe(201);
  return t.body;
}

const post = (id: string, segments: unknown, token = svc) =>
  api.request('POST', `/transcriptions/${id}/segments`, { token, body: { segments } });
const put = (id: string, segments: unknown, token = svc) =>
  api.request('PUT', `/transcriptions/${id}/segments`, { token, body: { segments } });
const stored = (id: string) =>
  sql<{ id: string } & Record<string, unknown>>(
    'SELECT * FROM transcript_segment WHERE transcription_id = $1 ORDER BY start_ms',
    [id],
  );
const vector = (seed: number) => Array.from({ length: 192 }, (_, i) => Math.sin(seed + i) / 2);

async function segmentEvents(transcriptionId: string): Promise<any[]> {
  const rows = await sql<{ user_id: string; payload: object }>(
    `SELECT user_id, payload FROM event_outbox WHERE event_type = 'TranscriptSegmentEvent' AND payload->>'transcription_id' = $1 ORDER BY seq`,
    [transcriptionId],
  );
  return rows.map((r) => ({ user_id: r.user_id, ...r.payload }));
}

describe('POST /transcriptions/{id}/segments (append)', () => {
  it('should store final segments with defaults and broadcast each to the owner', async () => {
    const t = await transcription();
    const res = await post(t.id, [
      { speaker_label: 'SPEAKER_0', text: 'hello', start_ms: 0, end_ms: 1200, confidence: 0.93, is_final: true },
      { text: 'world', start_ms: 1200.5 },
    ]);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    const list = await api.request('GET', `/transcriptions/${t.id}/segments`, { token: alice });
    expect(list.status).toBe(200);
    expect(list.body.items).toEqual([
      {
        id: expect.any(String),
        transcription_id: t.id,
        person_id: null,
        speaker_label: 'SPEAKER_0',
        text: 'hello',
        start_ms: 0,
        end_ms: 1200,
        confidence: 0.93,
        is_final: true,
        is_highlighted: false,
        feature_vector: null,
      },
      {
        id: expect.any(String),
        transcription_id: t.id,
        person_id: null,
        speaker_label: null,
        text: 'world',
        start_ms: 1200.5,
        end_ms: 1200.5,
        confidence: 0,
        is_final: true,
        is_highlighted: false,
        feature_vector: null,
      },
    ]);
    const events = await segmentEvents(t.id);
    expect(events).toHaveLength(2);
    expect(events[0]).toMatchObject({
      user_id: aliceId,
      type: 'TranscriptSegmentEvent',
      meeting_id: t.meeting_id,
      transcription_id: t.id,
    });
    expect(events.map((e) => e.segment.id)).toEqual(list.body.items.map((s) => s.id));
    expect(events[0].segment).toMatchObject({ text: 'hello', is_final: true, speaker_label: 'SPEAKER_0' });
  });

  it('should broadcast an interim segment with is_final false without storing it', async () => {
    const t = await transcription();
    const res = await post(t.id, [
      { text: 'final one', start_ms: 0 },
      { text: 'still talk', start_ms: 500, is_final: false, speaker_label: 'SPEAKER_1' },
    ]);
    expect(res.status).toBe(204);
    const rows = await stored(t.id);
    expect(rows.map((r) => r.text)).toEqual(['final one']);
    const events = await segmentEvents(t.id);
    expect(events.map((e) => [e.segment.text, e.segment.is_final])).toEqual([
      ['final one', true],
      ['still talk', false],
    ]);
    expect(events[1].segment).toMatchObject({
      id: null,
      transcription_id: t.id,
      speaker_label: 'SPEAKER_1',
      start_ms: 500,
    });
    expect(events[1].meeting_id).toBe(t.meeting_id);
  });

  it('should apply the stored speaker-label assignment to appended segments', async () => {
    const t = await transcription();
    const p = await api.person(aliceId);
    await sql('INSERT INTO meeting_speaker_label (meeting_id, speaker_label, person_id) VALUES ($1, $2, $3)', [
      t.meeting_id,
      'SPEAKER_2',
      p,
    ]);
    expect(
      (
        await post(t.id, [
          { speaker_label: 'SPEAKER_2', text: 'hi', start_ms: 1 },
          { speaker_label: 'SPEAKER_3', text: 'yo', start_ms: 2 },
        ])
      ).status,
    ).toBe(204);
    expect((await stored(t.id)).map((r) => r.person_id)).toEqual([p, null]);
    expect((await segmentEvents(t.id))[0].segment.person_id).toBe(p);
  });

  it('should store a valid feature_vector and reject bad ones with 422', async () => {
    const t = await transcription();
    const v = vector(1);
    expect((await post(t.id, [{ text: 'v', start_ms: 0, feature_vector: v }])).status).toBe(204);
    const got = (await api.request('GET', `/transcriptions/${t.id}/segments`, { token: svc })).body.items[0]
      .feature_vector;
    expect(got).toHaveLength(192);
    for (const [i, x] of (got as number[]).entries()) expect(x).toBeCloseTo(v[i], 5);
    const bad = [v.slice(1), [...v, 0], [...v.slice(1), 'x'], []];
    for (const feature_vector of bad) {
      const res = await post(t.id, [{ text: 'v', start_ms: 0, feature_vector }]);
      expect(res.status).toBe(422);
      expect(res.body.errors![0].path).toMatch(/^segments\.0\.feature_vector/);
    }
    // 1e999 parses as Infinity: not finite.
    const inf = await api.request('POST', `/transcriptions/${t.id}/segments`, {
      token: svc,
      body: `{"segments":[{"text":"v","start_ms":0,"feature_vector":[1e999${',0'.repeat(191)}]}]}`,
    });
    expect(inf.status).toBe(422);
    expect(await stored(t.id)).toHaveLength(1);
  });

  it('should accept a person of the owner and reject another user person with 422', async () => {
    const t = await transcription();
    const mine = await api.person(aliceId);
    const theirs = await api.person(bobId);
    expect((await post(t.id, [{ text: 'a', start_ms: 0, person_id: mine }])).status).toBe(204);
    const res = await post(t.id, [{ text: 'b', start_ms: 1, person_id: theirs }]);
    expect(res.status).toBe(422);
    expect((await post(t.id, [{ text: 'c', start_ms: 2, person_id: randomUUID() }])).status).toBe(422);
    expect((await stored(t.id)).map((r) => [r.text, r.person_id])).toEqual([['a', mine]]);
  });

  it('should validate the body with 422 and never 500', async () => {
    const t = await transcription();
    const cases: unknown[] = [
      [{ start_ms: 0 }],
      [{ text: 'x' }],
      [{ text: 'x', start_ms: -1 }],
      [{ text: 'x', start_ms: '0' }],
      [{ text: 'x', start_ms: 0, confidence: 2 }],
      [{ text: 'x', start_ms: 0, person_id: 'nope' }],
      [{ text: 'x', start_ms: 5000, end_ms: 10 }],
      'not an array',
      [null],
    ];
    for (const segments of cases)
      expect({ segments, status: (await post(t.id, segments)).status }).toEqual({ segments, status: 422 });
    expect((await api.request('POST', `/transcriptions/${t.id}/segments`, { token: svc, body: {} })).status).toBe(422);
    expect(
      (await api.request('POST', `/transcriptions/${t.id}/segments`, { token: svc, body: '{"segments":[' })).status,
    ).toBe(400);
    expect(await stored(t.id)).toHaveLength(0);
  });

  it('should answer 413 above 5,000 segments on POST and 20,000 on PUT, and store nothing', async () => {
    const t = await transcription();
    const many = (n: number) => Array.from({ length: n }, (_, i) => ({ text: `s${i}`, start_ms: i }));
    expect((await post(t.id, many(5001))).status).toBe(413);
    expect((await put(t.id, many(20_001))).status).toBe(413);
    expect(await stored(t.id)).toHaveLength(0);
  });

  it('should answer 404 for an unknown transcription and accept only the service scheme', async () => {
    const t = await transcription();
    expect((await post(randomUUID(), [{ text: 'x', start_ms: 0 }])).status).toBe(404);
    expect((await post(t.id, [{ text: 'x', start_ms: 0 }], alice)).status).toBe(403);
    expect((await api.request('POST', `/transcriptions/${t.id}/segments`, { body: { segments: [] } })).status).toBe(
      401,
    );
  });
});

describe('idempotent append (decisions.md section 7)', () => {
  const keyed = (id: string, segments: unknown, key: string) =>
    api.request('POST', `/transcriptions/${id}/segments`, {
      token: svc,
      body: { segments },
      headers: { 'idempotency-key': key },
    });

  it('should answer a repeat with the same Idempotency-Key 204 and add nothing, and 422 to the same key with another body', async () => {
    const t = await transcription();
    const key = randomUUID();
    const body = [{ speaker_label: 'SPEAKER_0', text: 'once', start_ms: 0, end_ms: 900 }];
    const first = await keyed(t.id, body, key);
    const again = await keyed(t.id, body, key);
    expect([first.status, again.status]).toEqual([204, 204]);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await stored(t.id)).toHaveLength(1);
    expect(await segmentEvents(t.id)).toHaveLength(1);
    expect((await keyed(t.id, [{ text: 'other', start_ms: 5 }], key)).status).toBe(422);
    expect((await keyed(t.id, body, 'not-a-uuid')).status).toBe(400);
    expect(await stored(t.id)).toHaveLength(1);
  });

  it('should store a client-chosen id, skip an identical repeat and answer 409 to different content, storing nothing of it', async () => {
    const t = await transcription();
    const id = randomUUID();
    const seg = {
      id,
      speaker_label: 'SPEAKER_1',
      text: 'mine',
      start_ms: 100,
      end_ms: 900,
      confidence: 0.8,
      feature_vector: vector(3),
    };
    expect((await post(t.id, [seg])).status).toBe(204);
    const other = { id: randomUUID(), text: 'next', start_ms: 1000 };
    expect((await post(t.id, [seg, other])).status).toBe(204);
    expect((await stored(t.id)).map((r) => [r.id, r.text])).toEqual([
      [id, 'mine'],
      [other.id, 'next'],
    ]);
    expect((await segmentEvents(t.id)).map((e) => e.segment.id)).toEqual([id, other.id]);

    const third = { id: randomUUID(), text: 'third', start_ms: 2000 };
    const changed = await post(t.id, [third, { ...seg, text: 'changed' }]);
    expect(changed.status).toBe(409);
    expect(changed.body.detail).toContain(id);
    expect(await stored(t.id)).toHaveLength(2);

    const elsewhere = await transcription();
    expect((await post(elsewhere.id, [seg])).status).toBe(409);
    expect((await put(elsewhere.id, [seg])).status).toBe(409);
    expect(await stored(elsewhere.id)).toHaveLength(0);
    expect((await post(t.id, [third, third])).status).toBe(422);
  });

  it('should store one copy when identical appends with one segment id race', async () => {
    const t = await transcription();
    const seg = { id: randomUUID(), text: 'raced', start_ms: 0 };
    const answers = await Promise.all(Array.from({ length: 6 }, () => post(t.id, [seg])));
    expect(answers.map((r) => r.status)).toEqual([204, 204, 204, 204, 204, 204]);
    expect(await stored(t.id)).toHaveLength(1);
    expect(await segmentEvents(t.id)).toHaveLength(1);
  });

  it('should keep client ids through a replace (PUT), so segment_ids can name them', async () => {
    const t = await transcription();
    const ids = [randomUUID(), randomUUID()];
    expect(
      (
        await put(
          t.id,
          ids.map((id, i) => ({ id, text: `s${i}`, start_ms: i * 1000 })),
        )
      ).status,
    ).toBe(204);
    expect((await stored(t.id)).map((r) => r.id)).toEqual(ids);
    expect(
      (
        await put(
          t.id,
          ids.map((id, i) => ({ id, text: `again ${i}`, start_ms: i * 1000 })),
        )
      ).status,
    ).toBe(204);
    expect((await stored(t.id)).map((r) => r.text)).toEqual(['again 0', 'again 1']);
  });
});

describe('PUT /transcriptions/{id}/segments (replace)', () => {
  it('should replace every segment and broadcast EntityChanged transcript_segment', async () => {
    const t = await transcription();
    await post(t.id, [{ text: 'old', start_ms: 0 }]);
    const res = await put(t.id, [
      { text: 'new 2', start_ms: 20 },
      { text: 'new 1', start_ms: 10 },
    ]);
    expect(res.status).toBe(204);
    expect((await stored(t.id)).map((r) => r.text)).toEqual(['new 1', 'new 2']);
    const events = await sql(
      `SELECT user_id, payload FROM event_outbox WHERE event_type = 'EntityChanged' AND payload->>'entity' = 'transcript_segment' AND payload->>'meeting_id' = $1`,
      [t.meeting_id],
    );
    expect(events).toHaveLength(1);
    expect(events[0].user_id).toBe(aliceId);
    expect(events[0].payload).toMatchObject({ action: 'updated', id: null, meeting_id: t.meeting_id });
    expect((await put(t.id, [])).status).toBe(204);
    expect(await stored(t.id)).toHaveLength(0);
  });

  it('should keep a speaker-label assignment across a rebuild', async () => {
    const t = await transcription();
    const p = await api.person(aliceId);
    await post(t.id, [{ speaker_label: 'SPEAKER_0', text: 'live', start_ms: 0 }]);
    await sql('INSERT INTO meeting_speaker_label (meeting_id, speaker_label, person_id) VALUES ($1, $2, $3)', [
      t.meeting_id,
      'SPEAKER_0',
      p,
    ]);
    const res = await put(t.id, [
      { speaker_label: 'SPEAKER_0', text: 'batch a', start_ms: 0 },
      { speaker_label: 'SPEAKER_1', text: 'batch b', start_ms: 5 },
      { speaker_label: 'SPEAKER_0', text: 'batch c', start_ms: 9 },
    ]);
    expect(res.status).toBe(204);
    expect((await stored(t.id)).map((r) => [r.text, r.person_id])).toEqual([
      ['batch a', p],
      ['batch b', null],
      ['batch c', p],
    ]);
  });

  it('should answer 409 while the live recording is still in processing, 204 once stopped', async () => {
    const t = await transcription();
    await post(t.id, [{ text: 'live', start_ms: 0 }]);
    await sql(
      `INSERT INTO recording (meeting_id, audio_version, transcription_id, state, encoding, max_duration_seconds) VALUES ($1, 1, $2, 'recording', 'pcm_s16le', 60)`,
      [t.meeting_id, t.id],
    );
    expect((await put(t.id, [{ text: 'batch', start_ms: 0 }])).status).toBe(409);
    await sql(`UPDATE recording SET state = 'stopping' WHERE meeting_id = $1`, [t.meeting_id]);
    const res = await put(t.id, [{ text: 'batch', start_ms: 0 }]);
    expect(res.status).toBe(409);
    expect(res.body.detail).toContain('processing');
    expect((await stored(t.id)).map((r) => r.text)).toEqual(['live']);
    await sql(`UPDATE recording SET state = 'stopped' WHERE meeting_id = $1`, [t.meeting_id]);
    expect((await put(t.id, [{ text: 'batch', start_ms: 0 }])).status).toBe(204);
    expect((await stored(t.id)).map((r) => r.text)).toEqual(['batch']);
  });

  it('should roll back the delete when the new set is invalid (another user person)', async () => {
    const t = await transcription();
    await post(t.id, [{ text: 'keep', start_ms: 0 }]);
    expect((await put(t.id, [{ text: 'x', start_ms: 0, person_id: await api.person(bobId) }])).status).toBe(422);
    expect((await stored(t.id)).map((r) => r.text)).toEqual(['keep']);
  });

  it('should replace 20,000 segments in one request', async () => {
    const t = await transcription();
    const p = await api.person(aliceId);
    await sql('INSERT INTO meeting_speaker_label (meeting_id, speaker_label, person_id) VALUES ($1, $2, $3)', [
      t.meeting_id,
      'SPEAKER_1',
      p,
    ]);
    const segments = Array.from({ length: 20_000 }, (_, i) => ({
      speaker_label: `SPEAKER_${i % 4}`,
      text: `segment number ${i} with some words in it`,
      start_ms: i * 1000,
      end_ms: i * 1000 + 900,
      confidence: 0.9,
      feature_vector: i % 2500 === 0 ? vector(i) : null,
    }));
    const started = performance.now();
    const res = await put(t.id, segments);
    const ms = performance.now() - started;
    expect(res.status).toBe(204);
    console.log(`PUT 20,000 segments: ${Math.round(ms)} ms`);
    const [{ n, labelled, vectors }] = await sql(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE person_id = $2)::int AS labelled, count(feature_vector)::int AS vectors FROM transcript_segment WHERE transcription_id = $1`,
      [t.id, p],
    );
    expect({ n, labelled, vectors }).toEqual({ n: 20_000, labelled: 5000, vectors: 8 });
    // Each embedding lands on its own segment (they travel as one float4[] beside the rows).
    const stored = await sql<{ start_ms: number; v: string }>(
      `SELECT start_ms, feature_vector::text AS v FROM transcript_segment WHERE transcription_id = $1 AND feature_vector IS NOT NULL ORDER BY start_ms`,
      [t.id],
    );
    expect(stored.map((r) => r.start_ms)).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((i) => i * 2500 * 1000));
    for (const r of stored) {
      for (const [d, x] of (pgvector.fromSql(r.v) as number[]).entries())
        expect(x).toBeCloseTo(vector(r.start_ms / 1000)[d], 5);
    }
  });

  it('should answer 404 for an unknown transcription and accept only the service scheme', async () => {
    const t = await transcription();
    expect((await put(randomUUID(), [])).status).toBe(404);
    expect((await put(t.id, [], alice)).status).toBe(403);
    expect((await api.request('PUT', `/transcriptions/${t.id}/segments`, { body: { segments: [] } })).status).toBe(401);
  });
});

describe('GET /transcriptions/{id}/segments', () => {
  it('should page by start_ms in both orders', async () => {
    const t = await transcription();
    await put(
      t.id,
      [3, 1, 4, 1.5, 9, 2].map((start_ms) => ({ text: `t${start_ms}`, start_ms })),
    );
    const walk = async (order: string) => {
      const seen: number[] = [];
      let cursor: string | null = null;
      do {
        const q =
          `/transcriptions/${t.id}/segments?limit=4&order=${order}${cursor ? `&cursor=${cursor}` : ''}` as const;
        const res = await api.request('GET', q, { token: alice });
        expect(res.status).toBe(200);
        seen.push(...res.body.items.map((s) => s.start_ms));
        cursor = res.body.next_cursor as string | null;
      } while (cursor);
      return seen;
    };
    expect(await walk('asc')).toEqual([1, 1.5, 2, 3, 4, 9]);
    expect(await walk('desc')).toEqual([9, 4, 3, 2, 1.5, 1]);
    expect((await api.request('GET', `/transcriptions/${t.id}/segments?order=sideways`, { token: alice })).status).toBe(
      422,
    );
    expect((await api.request('GET', `/transcriptions/${t.id}/segments?cursor=%%%`, { token: alice })).status).toBe(
      400,
    );
    expect((await api.request('GET', `/transcriptions/${t.id}/segments?limit=500`, { token: alice })).status).toBe(422);
  });

  it('should hide another user transcription with 404', async () => {
    const t = await transcription();
    expect((await api.request('GET', `/transcriptions/${t.id}/segments`, { token: bob })).status).toBe(404);
    expect((await api.request('GET', `/transcriptions/${t.id}/segments`)).status).toBe(401);
  });
});

describe('PATCH /transcript-segments/{id}', () => {
  const patch = (id: string, body: unknown, token = alice) =>
    api.request('PATCH', `/transcript-segments/${id}`, { token, body });

  it('should correct the text and the highlight, answer the whole segment, and broadcast it to the owner', async () => {
    const t = await transcription();
    await post(t.id, [
      { speaker_label: 'S0', text: 'helo wrold', start_ms: 0, end_ms: 900, confidence: 0.5, feature_vector: vector(1) },
    ]);
    const [row] = await stored(t.id);
    const res = await patch(row.id, { text: 'hello world' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: row.id,
      transcription_id: t.id,
      text: 'hello world',
      is_highlighted: false,
      speaker_label: 'S0',
      confidence: 0.5,
    });
    expect(res.body.feature_vector).toHaveLength(192);
    expect(await api.lastEvent(aliceId)).toMatchObject({
      type: 'EntityChanged',
      entity: 'transcript_segment',
      action: 'updated',
      id: row.id,
      meeting_id: t.meeting_id,
    });
    expect((await patch(row.id, { is_highlighted: true })).body).toMatchObject({
      text: 'hello world',
      is_highlighted: true,
    });
    expect((await stored(t.id))[0]).toMatchObject({ text: 'hello world', is_highlighted: true });
  });

  it("should answer 404 for another user's segment and an unknown id, changing nothing", async () => {
    const t = await transcription();
    await post(t.id, [{ text: 'mine', start_ms: 0 }]);
    const [row] = await stored(t.id);
    expect((await patch(row.id, { text: 'theirs' }, bob)).status).toBe(404);
    expect((await patch(randomUUID(), { text: 'x' })).status).toBe(404);
    expect((await stored(t.id))[0].text).toBe('mine');
  });

  it('should answer 422 to an empty, unknown-field or too-long patch, 401 without a token, 403 to the service token', async () => {
    const t = await transcription();
    await post(t.id, [{ text: 'mine', start_ms: 0 }]);
    const [row] = await stored(t.id);
    for (const body of [{}, { speaker_label: 'S9' }, { text: 'x'.repeat(100_001) }, { is_highlighted: 'yes' }]) {
      const res = await patch(row.id, body);
      expect(res.status, JSON.stringify(body).slice(0, 40)).toBe(422);
    }
    expect((await api.request('PATCH', `/transcript-segments/${row.id}`, { body: { text: 'x' } })).status).toBe(401);
    expect((await patch(row.id, { text: 'x' }, svc)).status).toBe(403); // the ML service may not edit
    expect((await stored(t.id))[0].text).toBe('mine');
  });
});

describe('ML writes on the live path (decisions.md section 8)', () => {
  const patchStatus = (id: string, status: string) =>
    api.request('PATCH', `/transcriptions/${id}`, { token: svc, body: { status } });
  /** Walks the status machine to `status`. */
  async function reach(id: string, status: 'synthesizing' | 'completed' | 'failed') {
    const path = {
      synthesizing: ['transcribing', 'synthesizing'],
      completed: ['transcribing', 'synthesizing', 'completed'],
      failed: ['transcribing', 'failed'],
    }[status];
    for (const s of path) expect((await patchStatus(id, s)).status).toBe(200);
  }

  it('should answer 409 invalid_state to an append after completed or failed, storing nothing, and accept one while synthesizing', async () => {
    for (const status of ['completed', 'failed'] as const) {
      const t = await transcription();
      await reach(t.id, status);
      const res = await post(t.id, [{ text: 'late tail', start_ms: 4000, end_ms: 5000 }]);
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({
        type: 'https://meeting-intelligence.dev/problems/conflict',
        detail: expect.stringContaining(status),
      });
      expect(await stored(t.id)).toHaveLength(0);
      expect(await segmentEvents(t.id)).toHaveLength(0);
    }
    const t = await transcription();
    await reach(t.id, 'synthesizing');
    expect((await post(t.id, [{ text: 'during the batch pass', start_ms: 0, end_ms: 10 }])).status).toBe(204);
    expect(await stored(t.id)).toHaveLength(1);
  });

  it('should answer an ML append retried after the completion: a replay of a landed one 204, one that never landed 409', async () => {
    const t = await transcription();
    await reach(t.id, 'synthesizing');
    const landed = { 'idempotency-key': randomUUID() };
    const body = { segments: [{ id: randomUUID(), text: 'landed', start_ms: 0, end_ms: 900 }] };
    const append = (headers: Record<string, string>, b = body) =>
      api.request('POST', `/transcriptions/${t.id}/segments`, { token: svc, body: b, headers });
    expect((await append(landed)).status).toBe(204);
    expect((await patchStatus(t.id, 'completed')).status).toBe(200);
    // The ML did not see the first answer and retries it: the stored answer, nothing added.
    const replay = await append(landed);
    expect(replay.status).toBe(204);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    // A request whose first attempt never reached the core: refused, the finished transcript unchanged.
    const late = { segments: [{ id: randomUUID(), text: 'tail', start_ms: 4000, end_ms: 5000 }] };
    const key = { 'idempotency-key': randomUUID() };
    for (let attempt = 0; attempt < 2; attempt++) {
      const res = await append(key, late);
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({
        type: 'https://meeting-intelligence.dev/problems/conflict',
        detail: expect.stringContaining('completed'),
      });
    }
    expect((await stored(t.id)).map((r) => r.text)).toEqual(['landed']);
  });

  it('should answer 422 naming the segment whose end is before its start, on POST and PUT, storing nothing; overlaps are fine', async () => {
    const t = await transcription();
    const backwards = [
      { text: 'a', start_ms: 0, end_ms: 1000 },
      { text: 'b', start_ms: 5000, end_ms: 10 },
    ];
    for (const write of [post, put]) {
      const res = await write(t.id, backwards);
      expect(res.status).toBe(422);
      expect(res.body.detail).toContain('segments.1.end_ms');
      expect(res.body.errors).toEqual([{ path: 'segments.1.end_ms', message: 'must not be before start_ms' }]);
    }
    expect(await stored(t.id)).toHaveLength(0);
    const overlapping = [
      { speaker_label: 'SPEAKER_0', text: 'a', start_ms: 4000, end_ms: 5000 },
      { speaker_label: 'SPEAKER_1', text: 'b', start_ms: 4500, end_ms: 5500 },
      { text: 'instant', start_ms: 6000, end_ms: 6000 },
      { text: 'no end given', start_ms: 7000 },
    ];
    expect((await post(t.id, overlapping)).status).toBe(204);
    expect((await put(t.id, overlapping)).status).toBe(204);
    expect((await stored(t.id)).map((r) => [r.start_ms, r.end_ms])).toEqual([
      [4000, 5000],
      [4500, 5500],
      [6000, 6000],
      [7000, 7000],
    ]);
  });

  it("should ignore unknown fields in the ML's bodies and keep users' bodies strict", async () => {
    const t = await transcription();
    const unknown = { text: 'x', start_ms: 0, end_ms: 1, language: 'en', words: [{ w: 'x' }] };
    expect((await post(t.id, [unknown])).status).toBe(204);
    expect(
      (
        await api.request('PUT', `/transcriptions/${t.id}/segments`, {
          token: svc,
          body: { segments: [unknown], model: 'v2' },
        })
      ).status,
    ).toBe(204);
    expect((await stored(t.id)).map((r) => r.text)).toEqual(['x']);
    const status = await api.request('PATCH', `/transcriptions/${t.id}`, {
      token: svc,
      body: { status: 'transcribing', worker: 'w-1' },
    });
    expect(status.status).toBe(200);
    // PATCH /meetings/{id} takes both credentials: the ML's headline ignores the extra field, the user's is 422.
    const asService = await api.request('PATCH', `/meetings/${t.meeting_id}`, {
      token: svc,
      body: { headline: 'From the ML', confidence: 0.8 },
    });
    expect(asService.status).toBe(200);
    expect(asService.body.headline).toBe('From the ML');
    const asUser = await api.request('PATCH', `/meetings/${t.meeting_id}`, {
      token: alice,
      body: { headline: 'Mine', confidence: 0.8 },
    });
    expect(asUser.status).toBe(422);
    expect(asUser.body.errors).toEqual([expect.objectContaining({ path: '(body)' })]);
    // Only unknown fields are dropped: the rest is validated as ever.
    expect((await post(t.id, [{ text: 'x', start_ms: -1, extra: 1 }])).status).toBe(422);
  });

  it('should attribute segment and label writes naming a merged person to the person it was merged into, chains followed', async () => {
    const [a, b, c] = [await api.person(aliceId), await api.person(aliceId), await api.person(aliceId)];
    const merge = (keep: string, other: string) => api.post(alice, `/people/${keep}/merge`, { person_id: other });
    expect((await merge(b, a)).status).toBe(200); // a → b
    expect((await merge(c, b)).status).toBe(200); // b → c: a follows to c
    const t = await transcription();
    expect(
      (await post(t.id, [{ text: 'said by a', start_ms: 0, end_ms: 1, speaker_label: 'S0', person_id: a }])).status,
    ).toBe(204);
    expect(
      (
        await post(t.id, [
          { text: 'said by b', start_ms: 2, end_ms: 3, speaker_label: 'S1', person_id: b, is_final: false },
        ])
      ).status,
    ).toBe(204);
    expect((await stored(t.id)).map((r) => r.person_id)).toEqual([c]);
    expect((await segmentEvents(t.id)).map((e) => e.segment.person_id)).toEqual([c, c]);
    expect(
      (await put(t.id, [{ text: 'rebuilt', start_ms: 0, end_ms: 1, speaker_label: 'S0', person_id: b }])).status,
    ).toBe(204);
    expect((await stored(t.id)).map((r) => r.person_id)).toEqual([c]);
    // A label assigned to a merged person goes to the one it was merged into.
    const assigned = await api.post(alice, `/meetings/${t.meeting_id}/speaker-labels`, {
      speaker_label: 'S0',
      person_id: a,
    });
    expect(assigned.status).toBe(200);
    expect(await sql('SELECT person_id FROM meeting_speaker_label WHERE meeting_id = $1', [t.meeting_id])).toEqual([
      { person_id: c },
    ]);
    // Another user's person is still no person of this meeting's owner.
    expect((await post(t.id, [{ text: 'x', start_ms: 0, person_id: await api.person(bobId) }])).status).toBe(422);
  });
});
