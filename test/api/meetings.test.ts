import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let alice: string;
let bob: string;

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('alice');
  bob = await api.token('bob');
});
afterAll(() => api?.close());

const create = (token: string, body: unknown, key: string = randomUUID()) =>
  api.request('POST', '/meetings', { token, body, headers: { 'idempotency-key': key } });

describe('meetings', () => {
  it('should create a meeting and return it whole with 201', async () => {
    const res = await create(alice, { title: 'Weekly sync', source_type: 'recording' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      title: 'Weekly sync',
      source_type: 'recording',
      end_time: null,
      headline: null,
      deleted_at: null,
    });
    expect(Date.parse(res.body.start_time)).not.toBeNaN();
    const got = await api.request('GET', `/meetings/${res.body.id}`, { token: alice });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  it('should answer another user with 404 as if the meeting did not exist', async () => {
    const { body } = await create(alice, { title: 'private', source_type: 'text' });
    for (const [m, p] of [
      ['GET', `/meetings/${body.id}`],
      ['DELETE', `/meetings/${body.id}`],
    ] as const) {
      const res = await api.request(m, p, { token: bob });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
    }
    const patch = await api.request('PATCH', `/meetings/${body.id}`, { token: bob, body: { title: 'x' } });
    expect(patch.status).toBe(404);
    expect((await api.request('GET', `/meetings/${body.id}`, { token: alice })).body.title).toBe('private');
  });

  it('should let the service set the headline with PATCH', async () => {
    const { body } = await create(alice, { title: 'm', source_type: 'recording' });
    const res = await api.request('PATCH', `/meetings/${body.id}`, {
      token: api.serviceToken,
      body: { headline: 'We shipped' },
    });
    expect(res.status).toBe(200);
    expect(res.body.headline).toBe('We shipped');
  });

  it('should list only the caller meetings, paginated with an opaque cursor', async () => {
    const carol = await api.token('carol');
    for (let i = 0; i < 5; i++)
      await create(carol, {
        title: `c${i}`,
        source_type: 'text',
        start_time: new Date(Date.UTC(2026, 0, 1 + i)).toISOString(),
      });
    const first = await api.request('GET', '/meetings?limit=2', { token: carol });
    expect(first.status).toBe(200);
    expect(first.body.items.map((m) => m.title)).toEqual(['c4', 'c3']);
    const second = await api.request('GET', `/meetings?limit=2&cursor=${first.body.next_cursor}`, { token: carol });
    expect(second.body.items.map((m) => m.title)).toEqual(['c2', 'c1']);
    const third = await api.request('GET', `/meetings?limit=2&cursor=${second.body.next_cursor}`, { token: carol });
    expect(third.body).toMatchObject({ next_cursor: null });
    expect(third.body.items.map((m) => m.title)).toEqual(['c0']);
    const bad = await api.request('GET', '/meetings?cursor=garbage', { token: carol });
    expect(bad.status).toBe(400);
  });

  it('should hide soft-deleted meetings', async () => {
    const { body } = await create(alice, { title: 'gone', source_type: 'text' });
    expect((await api.request('DELETE', `/meetings/${body.id}`, { token: alice })).status).toBe(204);
    expect((await api.request('GET', `/meetings/${body.id}`, { token: alice })).status).toBe(404);
  });
});

describe('validation and errors', () => {
  it('should answer 422 listing the invalid fields', async () => {
    const res = await create(alice, { title: '', source_type: 'video' });
    expect(res.status).toBe(422);
    expect(res.body.errors!.map((e) => e.path).sort()).toEqual(['source_type', 'title']);
    expect(res.body).toMatchObject({
      type: expect.any(String),
      title: expect.any(String),
      status: 422,
      detail: expect.any(String),
    });
  });

  it('should answer 400 to malformed JSON', async () => {
    const res = await create(alice, '{"title":');
    expect(res.status).toBe(400);
  });

  it('should answer 404 to an unknown route and 405 to a wrong method', async () => {
    expect((await api.request('GET', '/nope', { token: alice })).status).toBe(404);
    const res = await api.request('PUT', '/meetings', { token: alice });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toContain('GET');
  });

  it('should answer 401 without credentials and 403 for the wrong scheme', async () => {
    expect((await api.request('GET', '/meetings')).status).toBe(401);
    expect((await api.request('GET', '/meetings', { token: 'garbage' })).status).toBe(401);
    const res = await create(api.serviceToken, { title: 't', source_type: 'text' });
    expect(res.status).toBe(403);
  });

  it('should reject a non-uuid meeting id with 422', async () => {
    expect((await api.request('GET', '/meetings/not-a-uuid', { token: alice })).status).toBe(422);
  });
});

describe('idempotency', () => {
  it('should require a uuid Idempotency-Key', async () => {
    expect(
      (await api.request('POST', '/meetings', { token: alice, body: { title: 't', source_type: 'text' } })).status,
    ).toBe(400);
    expect((await create(alice, { title: 't', source_type: 'text' }, 'nope')).status).toBe(400);
  });

  it('should replay the first response for the same key and body', async () => {
    const key = randomUUID();
    const first = await create(alice, { title: 'once', source_type: 'text' }, key);
    const again = await create(alice, { title: 'once', source_type: 'text' }, key);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
  });

  it('should answer 422 when the key is reused with another body', async () => {
    const key = randomUUID();
    await create(alice, { title: 'a', source_type: 'text' }, key);
    expect((await create(alice, { title: 'b', source_type: 'text' }, key)).status).toBe(422);
  });

  it('should create one row for four concurrent identical requests', async () => {
    const dave = await api.token('dave');
    const key = randomUUID();
    const results = await Promise.all(
      [1, 2, 3, 4].map(() => create(dave, { title: 'race', source_type: 'text' }, key)),
    );
    for (const r of results) expect([201, 409]).toContain(r.status);
    const list = await api.request('GET', '/meetings', { token: dave });
    expect(list.body.items).toHaveLength(1);
    const created = results.filter((r) => r.status === 201);
    for (const r of created) expect(r.body.id).toBe(list.body.items[0].id);
  });
});

describe('service endpoints', () => {
  it('should serve /healthz without auth and the OpenAPI document', async () => {
    expect((await api.request('GET', '/healthz')).body).toEqual({ status: 'ok' });
    const doc = await api.request('GET', '/openapi.json');
    expect(doc.body.openapi).toBe('3.1.0');
    expect(doc.body.paths['/meetings'].post.security).toEqual([{ bearerAuth: [] }]);
    expect((await api.request('GET', '/docs')).status).toBe(200);
  });

  it('should create the user on first sight for GET /me', async () => {
    const res = await api.request('GET', '/me', { token: await api.token('erin') });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ username: 'erin', email: 'erin@example.test', identity_id: 'dev|erin' });
  });
});

describe('deleting a meeting', () => {
  it("should clear its tasks' meeting_id in the same transaction and broadcast each task as updated", async () => {
    const m = await api.meeting(alice);
    const task = (await api.post(alice, '/tasks', { content: 'follow up', meeting_id: m })).body.id;
    const other = (await api.post(alice, '/tasks', { content: 'unrelated' })).body.id;
    expect((await api.request('GET', `/tasks?meeting_id=${m}`, { token: alice })).body.items.map((t) => t.id)).toEqual([
      task,
    ]);
    expect((await api.request('DELETE', `/meetings/${m}`, { token: alice })).status).toBe(204);
    expect((await api.request('GET', `/tasks/${task}`, { token: alice })).body).toMatchObject({
      id: task,
      meeting_id: null,
      content: 'follow up',
    });
    expect((await api.request('GET', `/tasks?meeting_id=${m}`, { token: alice })).body.items).toEqual([]);
    expect((await api.request('GET', `/tasks/${other}`, { token: alice })).body.meeting_id).toBeNull();
    const [deleted, detached] = await api.lastEvents(await api.userId(alice), 2);
    expect(deleted).toMatchObject({ type: 'EntityChanged', entity: 'meeting', action: 'deleted', id: m });
    expect(detached).toMatchObject({
      type: 'EntityChanged',
      entity: 'task',
      action: 'updated',
      id: task,
      meeting_id: null,
    });
  });
});
