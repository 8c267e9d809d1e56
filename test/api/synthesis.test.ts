import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let alice: string;
let aliceId: string;
let bob: string;
let svc: string;

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('alice');
  bob = await api.token('bob');
  aliceId = (await api.request('GET', '/me', { token: alice })).body.id;
  svc = api.serviceToken;
});
afterAll(() => api?.close());

async function meeting(token = alice): Promise<string> {
  const res = await api.request('POST', '/meetings', {
    token,
    body: { title: 'm', source_type: 'recording' },
    headers: { 'idempotency-key': randomUUID() },
  });
  return res.body.id;
}

const put = (id: string, body: unknown, token = svc) =>
  api.request('PUT', `/meetings/${id}/synthesis`, { token, body });
const getMeeting = async (id: string) => (await api.request('GET', `/meetings/${id}`, { token: alice })).body;
const topics = async (id: string, token = alice) =>
  (await api.request('GET', `/meetings/${id}/topics`, { token })).body.items;

describe('PUT /meetings/{id}/synthesis', () => {
  it('should write summary, key_points and headline and broadcast EntityChanged meeting updated', async () => {
    const m = await meeting();
    const res = await put(m, {
      summary: 'We agreed.',
      key_points: { decisions: ['ship'], risks: [] },
      headline: 'Ship it',
    });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect(await getMeeting(m)).toMatchObject({
      summary: 'We agreed.',
      key_points: { decisions: ['ship'], risks: [] },
      headline: 'Ship it',
    });
    const { rows } = await api.rt.db.query(
      't',
      `SELECT user_id, payload FROM event_outbox WHERE event_type = 'EntityChanged' AND payload->>'meeting_id' = $1 AND payload->>'action' = 'updated'`,
      [m],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toEqual({
      user_id: aliceId,
      payload: { type: 'EntityChanged', entity: 'meeting', action: 'updated', id: m, meeting_id: m },
    });
  });

  it('should keep the headline when not given and clear it when null', async () => {
    const m = await meeting();
    await put(m, { summary: 'a', key_points: [], headline: 'H' });
    await put(m, { summary: 'b', key_points: ['k'] });
    expect(await getMeeting(m)).toMatchObject({ summary: 'b', key_points: ['k'], headline: 'H' });
    await put(m, { summary: 'c', key_points: null, headline: null });
    expect(await getMeeting(m)).toMatchObject({ summary: 'c', key_points: null, headline: null });
  });

  it("should answer 422 to a topic's segment_ids of another meeting, and change nothing", async () => {
    const m = await meeting();
    const [own] = await api.segments(alice, m, 1);
    const [foreign] = await api.segments(alice, await meeting(), 1);
    expect(
      (await put(m, { summary: 'kept', key_points: [], topics: [{ name: 'A', summary: 'a', segment_ids: [own] }] }))
        .status,
    ).toBe(204);
    const res = await put(m, {
      summary: 'new',
      key_points: [],
      topics: [
        { name: 'B', summary: 'b' },
        { name: 'C', summary: 'c', segment_ids: [own, foreign] },
      ],
    });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([
      { path: 'topics.1.segment_ids', message: `${foreign} is not a segment of this meeting` },
    ]);
    expect((await topics(m)).map((t) => [t.name, t.segment_ids])).toEqual([['A', [own]]]);
  });

  it('should replace all topics with their segment ids when topics is given, and keep them otherwise', async () => {
    const m = await meeting();
    const [s1, s2, s3] = await api.segments(alice, m, 3);
    await put(m, { summary: 's', key_points: [], topics: [{ name: 'Old', summary: 'gone soon' }] });
    const res = await put(m, {
      summary: 's',
      key_points: [],
      topics: [
        { name: 'Budget', summary: 'numbers', is_final: true, segment_ids: [s1, s2] },
        { name: 'Hiring', summary: 'people', segment_ids: [s3, s3] },
        { name: 'Misc', summary: 'rest' },
      ],
    });
    expect(res.status).toBe(204);
    const list = await topics(m);
    expect(list.map((t) => [t.name, t.summary, t.is_final, [...t.segment_ids].sort()])).toEqual([
      ['Budget', 'numbers', true, [s1, s2].sort()],
      ['Hiring', 'people', false, [s3]],
      ['Misc', 'rest', false, []],
    ]);
    expect(list[0]).toEqual({
      id: expect.any(String),
      meeting_id: m,
      name: 'Budget',
      summary: 'numbers',
      is_final: true,
      created_at: expect.any(String),
      updated_at: expect.any(String),
      segment_ids: expect.any(Array),
    });
    await put(m, { summary: 'no topics this time', key_points: [] });
    expect(await topics(m)).toEqual(list);
    await put(m, { summary: 'clear', key_points: [], topics: [] });
    expect(await topics(m)).toEqual([]);
  });

  it('should unlink talking points of replaced topics but keep them', async () => {
    const m = await meeting();
    await put(m, { summary: 's', key_points: [], topics: [{ name: 'T', summary: 't' }] });
    const [topic] = await topics(m);
    const tp = await api.request('POST', `/meetings/${m}/talking-points`, {
      token: svc,
      body: { content: 'p', topic_id: topic.id },
      headers: { 'idempotency-key': randomUUID() },
    });
    expect(tp.status).toBe(201);
    await put(m, { summary: 's', key_points: [], topics: [{ name: 'T2', summary: 't2' }] });
    const tps = (await api.request('GET', `/meetings/${m}/talking-points`, { token: alice })).body.items;
    expect(tps.map((t) => [t.id, t.topic_id])).toEqual([[tp.body.id, null]]);
  });

  it('should page topics in synthesis order', async () => {
    const m = await meeting();
    const names = Array.from({ length: 7 }, (_, i) => `topic ${i}`);
    await put(m, { summary: 's', key_points: [], topics: names.map((name) => ({ name, summary: name })) });
    const first = await api.request('GET', `/meetings/${m}/topics?limit=4`, { token: svc });
    const second = await api.request('GET', `/meetings/${m}/topics?limit=4&cursor=${first.body.next_cursor}`, {
      token: svc,
    });
    expect([...first.body.items, ...second.body.items].map((t) => t.name)).toEqual(names);
    expect(second.body.next_cursor).toBeNull();
  });

  it('should validate the body and change nothing on 422', async () => {
    const m = await meeting();
    await put(m, { summary: 'kept', key_points: ['k'], topics: [{ name: 'kept', summary: 'k' }] });
    const bad = [
      {},
      { key_points: [] },
      { summary: 's' },
      { summary: 5, key_points: [] },
      { summary: 's', key_points: [], topics: [{ summary: 'no name' }] },
      { summary: 's', key_points: [], topics: [{ name: 'n', summary: 's', segment_ids: ['nope'] }] },
      { summary: 's', key_points: [], topics: 'x' },
      // An unknown field does not save a body: the rest is validated as ever (the ML's fields are ignored, decisions.md section 8).
      { summary: 5, key_points: [], extra: true },
    ];
    for (const body of bad) expect({ body, status: (await put(m, body)).status }).toEqual({ body, status: 422 });
    expect((await put(m, '{"summary":')).status).toBe(400);
    expect(await getMeeting(m)).toMatchObject({ summary: 'kept', key_points: ['k'] });
    expect((await topics(m)).map((t) => t.name)).toEqual(['kept']);
  });

  it('should answer 404 for an unknown or deleted meeting, 403 for a user, 401 without auth', async () => {
    const body = { summary: 's', key_points: [] };
    expect((await put(randomUUID(), body)).status).toBe(404);
    const m = await meeting();
    expect((await put(m, body, alice)).status).toBe(403);
    expect((await api.request('PUT', `/meetings/${m}/synthesis`, { body })).status).toBe(401);
    await api.request('DELETE', `/meetings/${m}`, { token: alice });
    expect((await put(m, body)).status).toBe(404);
    expect((await api.request('GET', `/meetings/${m}/topics`, { token: alice })).status).toBe(404);
  });
});

describe('GET /meetings/{id}/topics', () => {
  it('should hide another user topics with 404', async () => {
    const m = await meeting();
    await put(m, { summary: 's', key_points: [], topics: [{ name: 'secret', summary: 's' }] });
    expect((await api.request('GET', `/meetings/${m}/topics`, { token: bob })).status).toBe(404);
    expect((await api.request('GET', `/meetings/${m}/topics`)).status).toBe(401);
    expect((await topics(m, svc)).map((t) => t.name)).toEqual(['secret']);
  });
});
