import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';
import { twoUsers, type TwoUsers } from './fixture';

let api: ApiHarness;
let alice: string;
let bob: string;
let aliceId: string;
let alicePerson: string;
let aliceMeeting: string;
let bobNote: string;
let resolve: TwoUsers['resolve'];

const create = (token: string, body: unknown, key?: string) => api.post(token, '/notes', body, key);

beforeAll(async () => {
  api = await startApi();
  ({ alice, bob, aliceId, alicePerson, aliceMeeting, resolve } = await twoUsers(api));
  bobNote = (await create(bob, { content: 'bob secret' })).body.id;
});
afterAll(() => api?.close());

describe('POST /notes', () => {
  it('should create a note about a meeting and emit EntityChanged with its meeting_id', async () => {
    const res = await create(alice, {
      content: 'Decided on Q3',
      subject_type: 'MEETING',
      subject_id: aliceMeeting,
      tags: ['decision', { id: 1 }],
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      user_id: aliceId,
      content: 'Decided on Q3',
      subject_type: 'MEETING',
      subject_id: aliceMeeting,
      tags: ['decision', { id: 1 }],
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(await api.lastEvent(aliceId)).toMatchObject({
      type: 'EntityChanged',
      entity: 'note',
      action: 'created',
      id: res.body.id,
      meeting_id: aliceMeeting,
    });
    expect((await api.request('GET', `/notes/${res.body.id}`, { token: alice })).body).toEqual(res.body);
  });

  it('should create a note about a person, and one about nothing, with meeting_id null in the event', async () => {
    const about = await create(alice, { content: 'Likes tea', subject_type: 'PERSON', subject_id: alicePerson });
    expect(about.status).toBe(201);
    expect(await api.lastEvent(aliceId)).toMatchObject({ entity: 'note', id: about.body.id, meeting_id: null });
    const free = await create(alice, { content: 'loose thought' });
    expect(free.body).toMatchObject({ subject_type: null, subject_id: null, tags: null });
  });

  it('should create one note for four concurrent identical requests', async () => {
    const carol = await api.token('carol');
    const key = randomUUID();
    const results = await Promise.all([1, 2, 3, 4].map(() => create(carol, { content: 'race' }, key)));
    for (const r of results) expect([201, 409]).toContain(r.status);
    const list = await api.request('GET', '/notes', { token: carol });
    expect(list.body.items).toHaveLength(1);
    const replayed = await create(carol, { content: 'race' }, key);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.body.id).toBe(list.body.items[0].id);
  });

  describe.each([
    ['empty content', { content: '' }, 'content'],
    ['missing content', { tags: [] }, 'content'],
    ['an unknown subject_type', { content: 'x', subject_type: 'TASK', subject_id: 'ALICE_PERSON' }, 'subject_type'],
    ['subject_type without subject_id', { content: 'x', subject_type: 'PERSON' }, 'subject_id'],
    ['subject_id without subject_type', { content: 'x', subject_id: 'ALICE_PERSON' }, 'subject_id'],
    ['a non-uuid subject_id', { content: 'x', subject_type: 'PERSON', subject_id: 'dana' }, 'subject_id'],
    ["another user's person", { content: 'x', subject_type: 'PERSON', subject_id: 'BOB_PERSON' }, 'subject_id'],
    ["another user's meeting", { content: 'x', subject_type: 'MEETING', subject_id: 'BOB_MEETING' }, 'subject_id'],
    [
      'a person id given as a meeting',
      { content: 'x', subject_type: 'MEETING', subject_id: 'ALICE_PERSON' },
      'subject_id',
    ],
    ['an unknown field', { content: 'x', user_id: randomUUID() }, '(body)'],
  ])('with %s', (_name, body, field) => {
    it(`should answer 422 naming ${field}`, async () => {
      const res = await create(alice, resolve(body));
      expect(res.status).toBe(422);
      expect(res.body.errors!.map((e) => e.path)).toContain(field);
    });
  });

  it('should answer 400 without an Idempotency-Key or with malformed JSON', async () => {
    expect((await api.request('POST', '/notes', { token: alice, body: { content: 'x' } })).status).toBe(400);
    expect((await create(alice, '{"content":')).status).toBe(400);
  });

  it('should answer 401 without credentials and 403 for the service scheme', async () => {
    expect((await create('', { content: 'x' })).status).toBe(401);
    expect((await create(api.serviceToken, { content: 'x' })).status).toBe(403);
  });
});

describe('GET /notes', () => {
  let dave: string;
  let m: string;
  let p: string;

  beforeAll(async () => {
    dave = await api.token('dave');
    const daveId = await api.userId(dave);
    m = await api.meeting(dave);
    p = await api.person(daveId, 'Fay');
    await create(dave, { content: 'n1', subject_type: 'MEETING', subject_id: m });
    await create(dave, { content: 'n2', subject_type: 'PERSON', subject_id: p });
    await create(dave, { content: 'n3' });
    await create(dave, { content: 'n4', subject_type: 'MEETING', subject_id: m });
  });

  const contents = async (query: string) => {
    const res = await api.request('GET', `/notes${query}` as `/notes?${string}`, { token: dave });
    expect(res.status).toBe(200);
    return res.body.items.map((n) => n.content);
  };

  it('should list only the caller notes, newest first, paginated', async () => {
    expect(await contents('')).toEqual(['n4', 'n3', 'n2', 'n1']);
    const first = await api.request('GET', '/notes?limit=3', { token: dave });
    expect(first.body.items).toHaveLength(3);
    const rest = await api.request('GET', `/notes?limit=3&cursor=${first.body.next_cursor}`, { token: dave });
    expect(rest.body).toMatchObject({ items: [expect.objectContaining({ content: 'n1' })], next_cursor: null });
  });

  it.each([
    ['subject_type', () => '?subject_type=PERSON', ['n2']],
    ['subject_id', () => `?subject_id=${m}`, ['n4', 'n1']],
    ['both', () => `?subject_type=MEETING&subject_id=${m}`, ['n4', 'n1']],
    ["another user's subject", () => `?subject_id=${aliceMeeting}`, []],
  ])('should filter on %s', async (_name, query, expected) => {
    expect(await contents(query())).toEqual(expected);
  });

  it.each([
    ['a bad cursor', '?cursor=%%%', 400],
    ['an unknown subject_type', '?subject_type=person', 422],
    ['a non-uuid subject_id', '?subject_id=1', 422],
    ['limit 500', '?limit=500', 422],
  ])('should reject %s', async (_name, query, status) => {
    expect((await api.request('GET', `/notes${query}`, { token: dave })).status).toBe(status);
  });

  it('should answer 401 without credentials and 403 for the service scheme', async () => {
    expect((await api.request('GET', '/notes')).status).toBe(401);
    expect((await api.request('GET', '/notes', { token: api.serviceToken })).status).toBe(403);
  });
});

describe('PATCH /notes/{id}', () => {
  const patch = (token: string, id: string, body: unknown) => api.request('PATCH', `/notes/${id}`, { token, body });

  it('should update content and tags, move and detach the subject, and emit EntityChanged', async () => {
    const { body: n } = await create(alice, { content: 'v1', tags: ['a'] });
    const moved = await patch(alice, n.id, {
      content: 'v2',
      tags: null,
      subject_type: 'MEETING',
      subject_id: aliceMeeting,
    });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ content: 'v2', tags: null, subject_type: 'MEETING', subject_id: aliceMeeting });
    expect(await api.lastEvent(aliceId)).toMatchObject({
      entity: 'note',
      action: 'updated',
      id: n.id,
      meeting_id: aliceMeeting,
    });
    const detached = await patch(alice, n.id, { subject_type: null, subject_id: null });
    expect(detached.body).toMatchObject({ content: 'v2', subject_type: null, subject_id: null });
  });

  it.each([
    ['an empty body', {}],
    ['only subject_type', { subject_type: 'PERSON' }],
    ['a half-cleared subject', { subject_type: null, subject_id: 'ALICE_PERSON' }],
    ["another user's person", { subject_type: 'PERSON', subject_id: 'BOB_PERSON' }],
    ['an empty content', { content: '' }],
  ])('should answer 422 for %s and change nothing', async (_name, body) => {
    const { body: n } = await create(alice, { content: 'keep', subject_type: 'PERSON', subject_id: alicePerson });
    expect((await patch(alice, n.id, resolve(body))).status).toBe(422);
    expect((await api.request('GET', `/notes/${n.id}`, { token: alice })).body).toEqual(n);
  });

  it("should answer 404 for another user's note and 401/403 without a user token", async () => {
    expect((await patch(alice, bobNote, { content: 'x' })).status).toBe(404);
    expect((await patch(api.serviceToken, bobNote, { content: 'x' })).status).toBe(403);
    expect((await patch('', bobNote, { content: 'x' })).status).toBe(401);
    expect((await api.request('GET', `/notes/${bobNote}`, { token: bob })).body.content).toBe('bob secret');
  });
});

describe('GET and DELETE /notes/{id}', () => {
  it('should hard-delete a note and emit EntityChanged', async () => {
    const { body: n } = await create(alice, { content: 'bye', subject_type: 'MEETING', subject_id: aliceMeeting });
    expect((await api.request('DELETE', `/notes/${n.id}`, { token: alice })).status).toBe(204);
    expect((await api.request('GET', `/notes/${n.id}`, { token: alice })).status).toBe(404);
    const { rows } = await api.rt.db.query('test.note', 'SELECT 1 FROM note WHERE id = $1', [n.id]);
    expect(rows).toHaveLength(0);
    expect(await api.lastEvent(aliceId)).toMatchObject({
      entity: 'note',
      action: 'deleted',
      id: n.id,
      meeting_id: aliceMeeting,
    });
    expect((await api.request('DELETE', `/notes/${n.id}`, { token: alice })).status).toBe(404);
  });

  it("should answer 404 for another user's note, 422 for a bad id and 401/403 without a user token", async () => {
    for (const method of ['GET', 'DELETE']) {
      expect((await api.request(method, `/notes/${bobNote}`, { token: alice })).status).toBe(404);
      expect((await api.request(method, `/notes/${bobNote}`, { token: api.serviceToken })).status).toBe(403);
      expect((await api.request(method, `/notes/${bobNote}`)).status).toBe(401);
      expect((await api.request(method, '/notes/123', { token: alice })).status).toBe(422);
    }
    expect((await api.request('GET', `/notes/${bobNote}`, { token: bob })).status).toBe(200);
  });
});
