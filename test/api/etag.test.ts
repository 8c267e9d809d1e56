// ETag / If-Match on meeting, person, task, note and transcript segment: a GET's tag, a PATCH
// only if unchanged (412 otherwise, nothing written), and of two writers holding the same tag
// only one wins; a DELETE of a meeting, person, task or note honours If-Match the same way.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let alice: string;

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('alice');
});
afterAll(() => api?.close());

const created = (path: string, body: unknown) => async () => (await api.post(alice, path, body)).body.id as string;
const deletable = [
  {
    name: 'meeting',
    path: '/meetings',
    fresh: created('/meetings', { title: 'm', source_type: 'text' }),
    field: 'title',
  },
  { name: 'person', path: '/people', fresh: created('/people', { display_name: 'Dana' }), field: 'display_name' },
  { name: 'task', path: '/tasks', fresh: created('/tasks', { content: 'write it' }), field: 'content' },
  { name: 'note', path: '/notes', fresh: created('/notes', { content: 'remember' }), field: 'content' },
];

/** A segment of a meeting of alice's, written as the ML service writes it. */
async function freshSegment(): Promise<string> {
  const m = await api.meeting(alice, 'recording');
  const t = (await api.post(alice, `/meetings/${m}/transcriptions`)).body.id;
  const segments = [{ speaker_label: 'S0', text: 'hello', start_ms: 0, end_ms: 1000 }];
  expect(
    (await api.request('POST', `/transcriptions/${t}/segments`, { token: api.serviceToken, body: { segments } }))
      .status,
  ).toBe(204);
  return (await api.request('GET', `/transcriptions/${t}/segments`, { token: alice })).body.items[0].id;
}
const resources = [
  ...deletable,
  { name: 'transcript segment', path: '/transcript-segments', fresh: freshSegment, field: 'text' },
];

describe.each(resources)('$name', ({ path, fresh, field }) => {
  const get = (id: string) => api.request('GET', `${path}/${id}`, { token: alice });
  const patch = (id: string, value: string, ifMatch?: string) =>
    api.request('PATCH', `${path}/${id}`, {
      token: alice,
      body: { [field]: value },
      headers: ifMatch ? { 'if-match': ifMatch } : {},
    });

  it('should carry an ETag that changes with the record, and the PATCH answer should carry the new one', async () => {
    const id = await fresh();
    const first = await get(id);
    const tag = first.headers.get('etag')!;
    expect(tag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect((await get(id)).headers.get('etag')).toBe(tag);
    const updated = await patch(id, 'changed', tag);
    expect(updated.status).toBe(200);
    expect(updated.body[field]).toBe('changed');
    const newTag = updated.headers.get('etag');
    expect(newTag).not.toBe(tag);
    expect((await get(id)).headers.get('etag')).toBe(newTag);
  });

  it('should answer 412 to a stale If-Match and change nothing; * and no If-Match always apply', async () => {
    const id = await fresh();
    const stale = (await get(id)).headers.get('etag')!;
    expect((await patch(id, 'first')).status).toBe(200);
    const refused = await patch(id, 'second', stale);
    expect(refused.status).toBe(412);
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    expect(refused.body.type).toMatch(/precondition_failed$/);
    expect((await get(id)).body[field]).toBe('first');
    expect((await patch(id, 'third', `"other", ${(await get(id)).headers.get('etag')}`)).status).toBe(200);
    expect((await patch(id, 'fourth', '*')).status).toBe(200);
    expect((await get(id)).body[field]).toBe('fourth');
  });

  it('should let only one of two concurrent writers holding the same ETag win', async () => {
    const id = await fresh();
    const tag = (await get(id)).headers.get('etag')!;
    const answers = await Promise.all(['a', 'b', 'c', 'd'].map((v) => patch(id, v, tag)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 412, 412, 412]);
    const winner = answers.find((a) => a.status === 200)!.body[field];
    expect((await get(id)).body[field]).toBe(winner);
  });
});

describe.each(deletable)('DELETE of a $name', ({ path, fresh, field }) => {
  const get = (id: string) => api.request('GET', `${path}/${id}`, { token: alice });
  const del = (id: string, ifMatch: string) =>
    api.request('DELETE', `${path}/${id}`, { token: alice, headers: { 'if-match': ifMatch } });

  it('should answer 412 to a stale If-Match and keep the record; the current tag or * deletes it', async () => {
    const id = await fresh();
    const stale = (await get(id)).headers.get('etag')!;
    expect((await api.request('PATCH', `${path}/${id}`, { token: alice, body: { [field]: 'moved on' } })).status).toBe(
      200,
    );
    const refused = await del(id, stale);
    expect(refused.status).toBe(412);
    expect(refused.body.type).toMatch(/precondition_failed$/);
    expect((await get(id)).status).toBe(200);
    expect((await del(id, (await get(id)).headers.get('etag')!)).status).toBe(204);
    expect((await get(id)).status).toBe(404);
    const other = await fresh();
    expect((await del(other, '*')).status).toBe(204);
    expect((await del(other, '*')).status).toBe(404);
  });
});

describe('GET /transcript-segments/{id}', () => {
  it("should answer 404 for another user's segment, and an unknown id; 401 without a token", async () => {
    const id = await freshSegment();
    const bob = await api.token('bob');
    expect((await api.request('GET', `/transcript-segments/${id}`, { token: bob })).status).toBe(404);
    expect(
      (
        await api.request('PATCH', `/transcript-segments/${id}`, {
          token: bob,
          body: { text: 'x' },
          headers: { 'if-match': '*' },
        })
      ).status,
    ).toBe(404);
    expect((await api.request('GET', `/transcript-segments/${randomUUID()}`, { token: alice })).status).toBe(404);
    expect((await api.request('GET', `/transcript-segments/${id}`)).status).toBe(401);
    const got = await api.request('GET', `/transcript-segments/${id}`, { token: alice });
    expect(got.body).toMatchObject({ id, text: 'hello', speaker_label: 'S0' });
  });
});
