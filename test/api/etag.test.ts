// ETag / If-Match on meeting, person, task and note: a GET's tag, a PATCH only if unchanged
// (412 otherwise, nothing written), and of two writers holding the same tag only one wins.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let alice: string;

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('alice');
});
afterAll(() => api?.close());

const resources = [
  { name: 'meeting', path: '/meetings', create: { title: 'm', source_type: 'text' }, field: 'title' },
  { name: 'person', path: '/people', create: { display_name: 'Dana' }, field: 'display_name' },
  { name: 'task', path: '/tasks', create: { content: 'write it' }, field: 'content' },
  { name: 'note', path: '/notes', create: { content: 'remember' }, field: 'content' },
];

describe.each(resources)('$name', ({ path, create, field }) => {
  const fresh = async () => (await api.post(alice, path, create)).body.id as string;
  const get = (id: string) => api.request('GET', `${path}/${id}`, { token: alice });
  const patch = (id: string, value: string, ifMatch?: string) =>
    api.request('PATCH', `${path}/${id}`, { token: alice, body: { [field]: value }, headers: ifMatch ? { 'if-match': ifMatch } : {} });

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
