import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTask } from '@mi/lib/repositories/tasks';
import { startApi, type ApiHarness } from '../harness';
import { twoUsers, type TwoUsers } from './fixture';
import { until } from '../support/poll';

let api: ApiHarness;
let alice: string;
let bob: string;
let aliceId: string;
let alicePerson: string;
let aliceMeeting: string;
let bobPerson: string;
let bobMeeting: string;
let bobTask: string;
let resolve: TwoUsers['resolve'];

const create = (token: string, body: unknown, key?: string) => api.post(token, '/tasks', body, key);

beforeAll(async () => {
  api = await startApi();
  ({ alice, bob, aliceId, alicePerson, aliceMeeting, bobPerson, bobMeeting, resolve } = await twoUsers(api));
  bobTask = (await create(bob, { content: 'bob private' })).body.id;
});
afterAll(() => api?.close());

describe('POST /tasks', () => {
  it('should create a user task with every column and emit EntityChanged', async () => {
    const res = await create(alice, {
      content: 'Send the deck',
      due_date: '2026-12-01',
      assigned_to: alicePerson,
      meeting_id: aliceMeeting,
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      user_id: aliceId,
      content: 'Send the deck',
      status: 'pending',
      source: 'user',
      due_date: '2026-12-01',
      assigned_to: alicePerson,
      meeting_id: aliceMeeting,
      parent_task_id: null,
      deleted_at: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(await api.lastEvents(aliceId, 1)).toEqual([
      expect.objectContaining({
        type: 'EntityChanged',
        entity: 'task',
        action: 'created',
        id: res.body.id,
        meeting_id: aliceMeeting,
      }),
    ]);
    const got = await api.request('GET', `/tasks/${res.body.id}`, { token: alice });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  it('should replay the first response for a repeated Idempotency-Key and require one', async () => {
    const key = randomUUID();
    const first = await create(alice, { content: 'once' }, key);
    const again = await create(alice, { content: 'once' }, key);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect((await create(alice, { content: 'other' }, key)).status).toBe(422);
    expect((await api.request('POST', '/tasks', { token: alice, body: { content: 'x' } })).status).toBe(400);
  });

  describe.each([
    ['empty content', { content: '' }, 'content'],
    ['blank content', { content: '   ' }, 'content'],
    ['missing content', { status: 'pending' }, 'content'],
    ['content of the wrong type', { content: 42 }, 'content'],
    ['too long content', { content: 'x'.repeat(10_001) }, 'content'],
    ['unknown status', { content: 'x', status: 'done' }, 'status'],
    ['impossible due_date', { content: 'x', due_date: '2026-02-30' }, 'due_date'],
    ['non-ISO due_date', { content: 'x', due_date: '12/01/2026' }, 'due_date'],
    ['non-uuid assigned_to', { content: 'x', assigned_to: 'dana' }, 'assigned_to'],
    ['non-uuid parent_task_id', { content: 'x', parent_task_id: 1 }, 'parent_task_id'],
    ['source set by the client', { content: 'x', source: 'system' }, '(body)'],
  ])('with %s', (_name, body, field) => {
    it(`should answer 422 naming ${field}`, async () => {
      const res = await create(alice, body);
      expect(res.status).toBe(422);
      expect(res.body.errors!.map((e) => e.path)).toContain(field);
    });
  });

  describe.each([
    ['assigned_to', () => ({ assigned_to: bobPerson })],
    ['meeting_id', () => ({ meeting_id: bobMeeting })],
    ['parent_task_id', () => ({ parent_task_id: bobTask })],
    ['assigned_to', () => ({ assigned_to: randomUUID() })],
  ])("with another user's or a missing %s", (field, refs) => {
    it('should answer 422 as if it did not exist', async () => {
      const res = await create(alice, { content: 'x', ...refs() });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual([{ path: field, message: expect.any(String) }]);
    });
  });

  it('should refuse a soft-deleted meeting or parent task with 422', async () => {
    const m = await api.meeting(alice);
    await api.request('DELETE', `/meetings/${m}`, { token: alice });
    expect((await create(alice, { content: 'x', meeting_id: m })).status).toBe(422);
    const parent = (await create(alice, { content: 'gone' })).body.id;
    await api.request('DELETE', `/tasks/${parent}`, { token: alice });
    expect((await create(alice, { content: 'x', parent_task_id: parent })).status).toBe(422);
  });

  it('should answer 401 without credentials and 403 for the service scheme', async () => {
    expect((await create('', { content: 'x' })).status).toBe(401);
    expect((await create(api.serviceToken, { content: 'x' })).status).toBe(403);
  });
});

describe('GET /tasks', () => {
  let carol: string;
  let carolId: string;
  let ids: Record<string, string>;
  let m1: string;
  let dana: string;

  beforeAll(async () => {
    carol = await api.token('carol');
    carolId = await api.userId(carol);
    m1 = await api.meeting(carol);
    dana = await api.person(carolId, 'Dana');
    ids = {};
    ids.a = (await create(carol, { content: 'a', meeting_id: m1 })).body.id;
    ids.b = (await create(carol, { content: 'b', status: 'completed', assigned_to: dana })).body.id;
    ids.c = (await create(carol, { content: 'c', parent_task_id: ids.a })).body.id;
    ids.sys = (await createTask(api.rt.db, carolId, { content: 'sys', meeting_id: m1 }, 'system')).id;
    ids.gone = (await create(carol, { content: 'gone' })).body.id;
    await api.request('DELETE', `/tasks/${ids.gone}`, { token: carol });
  });

  const contents = async (query: string) => {
    const res = await api.request('GET', `/tasks${query}` as `/tasks?${string}`, { token: carol });
    expect(res.status).toBe(200);
    return res.body.items.map((t) => t.content);
  };

  it('should list only the caller live tasks, newest first', async () => {
    expect(await contents('')).toEqual(['sys', 'c', 'b', 'a']);
  });

  it.each([
    ['meeting_id', () => `?meeting_id=${m1}`, ['sys', 'a']],
    ['status', () => '?status=completed', ['b']],
    ['assigned_to', () => `?assigned_to=${dana}`, ['b']],
    ['source', () => '?source=system', ['sys']],
    ['parent_task_id', () => `?parent_task_id=${ids.a}`, ['c']],
    ['several filters', () => `?meeting_id=${m1}&source=user`, ['a']],
  ])('should filter on %s', async (_name, query, expected) => {
    expect(await contents(query())).toEqual(expected);
  });

  it('should paginate with an opaque cursor without skipping or repeating', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await api.request('GET', `/tasks?limit=1${cursor ? `&cursor=${cursor}` : ''}`, { token: carol });
      expect(res.body.items.length).toBeLessThanOrEqual(1);
      seen.push(...res.body.items.map((t) => t.content));
      cursor = res.body.next_cursor as string | null;
    } while (cursor);
    expect(seen).toEqual(['sys', 'c', 'b', 'a']);
  });

  it('should list the children of a task, and 404 for a task that is not the caller', async () => {
    const res = await api.request('GET', `/tasks/${ids.a}/children`, { token: carol });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      items: [expect.objectContaining({ id: ids.c, parent_task_id: ids.a })],
      next_cursor: null,
    });
    expect((await api.request('GET', `/tasks/${ids.a}/children`, { token: alice })).status).toBe(404);
    expect((await api.request('GET', `/tasks/${ids.gone}/children`, { token: carol })).status).toBe(404);
  });

  it.each([
    ['a malformed cursor', '?cursor=garbage', 400],
    ['a cursor of the wrong shape', `?cursor=${Buffer.from('{"a":1}').toString('base64url')}`, 400],
    ['limit 0', '?limit=0', 422],
    ['limit above 200', '?limit=201', 422],
    ['an unknown status', '?status=open', 422],
    ['a non-uuid meeting_id', '?meeting_id=x', 422],
  ])('should reject %s', async (_name, query, status) => {
    expect((await api.request('GET', `/tasks${query}`, { token: carol })).status).toBe(status);
  });

  it('should answer 401 without credentials and 403 for the service scheme', async () => {
    expect((await api.request('GET', '/tasks')).status).toBe(401);
    expect((await api.request('GET', '/tasks', { token: api.serviceToken })).status).toBe(403);
  });
});

describe('GET /tasks/{id}', () => {
  it("should answer 404 for another user's, a deleted or a missing task and 422 for a non-uuid id", async () => {
    expect((await api.request('GET', `/tasks/${bobTask}`, { token: alice })).status).toBe(404);
    expect((await api.request('GET', `/tasks/${randomUUID()}`, { token: alice })).status).toBe(404);
    expect((await api.request('GET', '/tasks/nope', { token: alice })).status).toBe(422);
    expect((await api.request('GET', `/tasks/${bobTask}`, { token: api.serviceToken })).status).toBe(403);
    expect((await api.request('GET', `/tasks/${bobTask}`)).status).toBe(401);
  });
});

describe('PATCH /tasks/{id}', () => {
  const patch = (token: string, id: string, body: unknown) => api.request('PATCH', `/tasks/${id}`, { token, body });

  it('should update the given fields, clear nulls, bump updated_at and emit EntityChanged', async () => {
    const { body: t } = await create(alice, { content: 'draft', due_date: '2026-01-01', meeting_id: aliceMeeting });
    // The clock moves past the creation, so the PATCH's updated_at must differ.
    await until('the clock past the creation', () => Date.now() > Date.parse(t.updated_at));
    const res = await patch(alice, t.id, {
      content: 'final',
      status: 'completed',
      due_date: null,
      assigned_to: alicePerson,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      content: 'final',
      status: 'completed',
      due_date: null,
      assigned_to: alicePerson,
      meeting_id: aliceMeeting,
      source: 'user',
    });
    expect(Date.parse(res.body.updated_at)).toBeGreaterThan(Date.parse(t.updated_at));
    expect(await api.lastEvents(aliceId, 1)).toEqual([
      expect.objectContaining({ entity: 'task', action: 'updated', id: t.id, meeting_id: aliceMeeting }),
    ]);
    expect((await api.request('GET', `/tasks/${t.id}`, { token: alice })).body).toEqual(res.body);
  });

  it('should refuse making a task its own ancestor with 422', async () => {
    const root = (await create(alice, { content: 'root' })).body.id;
    const child = (await create(alice, { content: 'child', parent_task_id: root })).body.id;
    const grandchild = (await create(alice, { content: 'grandchild', parent_task_id: child })).body.id;
    for (const parent of [root, grandchild]) {
      const res = await patch(alice, root, { parent_task_id: parent });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual([{ path: 'parent_task_id', message: expect.any(String) }]);
    }
    expect((await patch(alice, grandchild, { parent_task_id: root })).body.parent_task_id).toBe(root);
    expect((await patch(alice, child, { parent_task_id: null })).body.parent_task_id).toBeNull();
  });

  describe.each([
    ['an empty body', {}],
    ['an unknown field', { title: 'x' }],
    ['a null content', { content: null }],
    ['a null status', { status: null }],
    ['a bad due_date', { due_date: '2026-13-01' }],
    ["another user's person", { assigned_to: 'BOB_PERSON' }],
    ["another user's meeting", { meeting_id: 'BOB_MEETING' }],
    ["another user's task as parent", { parent_task_id: 'BOB_TASK' }],
  ])('with %s', (_name, raw) => {
    it('should answer 422 and change nothing', async () => {
      const { body: t } = await create(alice, { content: 'keep' });
      expect((await patch(alice, t.id, resolve(raw, { BOB_TASK: bobTask }))).status).toBe(422);
      expect((await api.request('GET', `/tasks/${t.id}`, { token: alice })).body).toEqual(t);
    });
  });

  it("should answer 404 for another user's task and leave it alone", async () => {
    expect((await patch(alice, bobTask, { content: 'hacked' })).status).toBe(404);
    expect((await api.request('GET', `/tasks/${bobTask}`, { token: bob })).body.content).toBe('bob private');
    expect((await patch(api.serviceToken, bobTask, { content: 'x' })).status).toBe(403);
    expect((await patch('', bobTask, { content: 'x' })).status).toBe(401);
  });
});

describe('DELETE /tasks/{id}', () => {
  it('should soft-delete the task with its descendants, emitting one event each', async () => {
    const root = (await create(alice, { content: 'root', meeting_id: aliceMeeting })).body.id;
    const child = (await create(alice, { content: 'child', parent_task_id: root })).body.id;
    const grandchild = (await create(alice, { content: 'grandchild', parent_task_id: child })).body.id;
    const other = (await create(alice, { content: 'other' })).body.id;
    const res = await api.request('DELETE', `/tasks/${root}`, { token: alice });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    for (const id of [root, child, grandchild])
      expect((await api.request('GET', `/tasks/${id}`, { token: alice })).status).toBe(404);
    expect((await api.request('GET', `/tasks/${other}`, { token: alice })).status).toBe(200);
    const { rows } = await api.rt.db.query(
      'test.deleted',
      'SELECT count(*)::int AS n FROM task WHERE id = ANY($1) AND deleted_at IS NOT NULL',
      [[root, child, grandchild]],
    );
    expect(rows[0].n).toBe(3);
    const events = await api.lastEvents(aliceId, 3);
    expect(events.map((e) => e.id).sort()).toEqual([root, child, grandchild].sort());
    expect(events.every((e) => e.entity === 'task' && e.action === 'deleted')).toBe(true);
    expect(events.find((e) => e.id === root).meeting_id).toBe(aliceMeeting);
    expect((await api.request('DELETE', `/tasks/${root}`, { token: alice })).status).toBe(404);
  });

  it("should answer 404 for another user's task and 401/403 without a user token", async () => {
    expect((await api.request('DELETE', `/tasks/${bobTask}`, { token: alice })).status).toBe(404);
    expect((await api.request('DELETE', `/tasks/${bobTask}`, { token: api.serviceToken })).status).toBe(403);
    expect((await api.request('DELETE', `/tasks/${bobTask}`)).status).toBe(401);
    expect((await api.request('GET', `/tasks/${bobTask}`, { token: bob })).status).toBe(200);
  });
});
