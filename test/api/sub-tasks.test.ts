import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';
import { twoUsers, type TwoUsers } from './fixture';

let api: ApiHarness;
let alice: string;
let bob: string;
let aliceId: string;
let alicePerson: string;
let meetingId: string;
let taskId: string;
let bobTask: string;
let bobSub: string;
let resolve: TwoUsers['resolve'];

const addSub = (token: string, task: string, body: unknown, key?: string) =>
  api.post(token, `/tasks/${task}/sub-tasks`, body, key);

beforeAll(async () => {
  api = await startApi();
  ({ alice, bob, aliceId, alicePerson, aliceMeeting: meetingId, resolve } = await twoUsers(api));
  taskId = (await api.post(alice, '/tasks', { content: 'parent', meeting_id: meetingId })).body.id;
  bobTask = (await api.post(bob, '/tasks', { content: 'bob' })).body.id;
  bobSub = (await addSub(bob, bobTask, { content: 'bob sub' })).body.id;
});
afterAll(() => api?.close());

describe('POST /tasks/{id}/sub-tasks', () => {
  it('should create a sub-task and emit EntityChanged with the task meeting', async () => {
    const res = await addSub(alice, taskId, { content: 'step 1', assigned_to: alicePerson, due_date: '2026-12-24' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      task_id: taskId,
      content: 'step 1',
      status: 'pending',
      assigned_to: alicePerson,
      due_date: '2026-12-24',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(await api.lastEvent(aliceId)).toMatchObject({
      type: 'EntityChanged',
      entity: 'sub_task',
      action: 'created',
      id: res.body.id,
      meeting_id: meetingId,
    });
    expect((await api.request('GET', `/sub-tasks/${res.body.id}`, { token: alice })).body).toEqual(res.body);
  });

  it('should replay on a repeated Idempotency-Key and require one', async () => {
    const key = randomUUID();
    const first = await addSub(alice, taskId, { content: 'once' }, key);
    const again = await addSub(alice, taskId, { content: 'once' }, key);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(
      (await api.request('POST', `/tasks/${taskId}/sub-tasks`, { token: alice, body: { content: 'x' } })).status,
    ).toBe(400);
  });

  describe.each([
    ['empty content', { content: '' }, 'content'],
    ['missing content', {}, 'content'],
    ['unknown status', { content: 'x', status: 'doing' }, 'status'],
    ['bad due_date', { content: 'x', due_date: '2026-1-1' }, 'due_date'],
    ['non-uuid assigned_to', { content: 'x', assigned_to: 'dana' }, 'assigned_to'],
    ["another user's person", { content: 'x', assigned_to: 'BOB_PERSON' }, 'assigned_to'],
    ['unknown field', { content: 'x', task_id: randomUUID() }, '(body)'],
  ])('with %s', (_name, raw, field) => {
    it(`should answer 422 naming ${field}`, async () => {
      const res = await addSub(alice, taskId, resolve(raw));
      expect(res.status).toBe(422);
      expect(res.body.errors!.map((e) => e.path)).toContain(field);
    });
  });

  it("should answer 404 for another user's, a deleted or a missing task", async () => {
    expect((await addSub(alice, bobTask, { content: 'x' })).status).toBe(404);
    expect((await addSub(alice, randomUUID(), { content: 'x' })).status).toBe(404);
    const gone = (await api.post(alice, '/tasks', { content: 'gone' })).body.id;
    await api.request('DELETE', `/tasks/${gone}`, { token: alice });
    expect((await addSub(alice, gone, { content: 'x' })).status).toBe(404);
  });

  it('should answer 401 without credentials and 403 for the service scheme', async () => {
    expect((await addSub('', taskId, { content: 'x' })).status).toBe(401);
    expect((await addSub(api.serviceToken, taskId, { content: 'x' })).status).toBe(403);
  });
});

describe('GET /tasks/{id}/sub-tasks', () => {
  it('should list the sub-tasks oldest first with pagination', async () => {
    const t = (await api.post(alice, '/tasks', { content: 'list' })).body.id;
    for (const c of ['one', 'two', 'three']) await addSub(alice, t, { content: c });
    const first = await api.request('GET', `/tasks/${t}/sub-tasks?limit=2`, { token: alice });
    expect(first.status).toBe(200);
    expect(first.body.items.map((s) => s.content)).toEqual(['one', 'two']);
    const second = await api.request('GET', `/tasks/${t}/sub-tasks?limit=2&cursor=${first.body.next_cursor}`, {
      token: alice,
    });
    expect(second.body).toMatchObject({ next_cursor: null, items: [expect.objectContaining({ content: 'three' })] });
    expect((await api.request('GET', `/tasks/${t}/sub-tasks?cursor=bad`, { token: alice })).status).toBe(400);
  });

  it("should answer 404 for another user's task or a deleted task, 401/403 without a user token", async () => {
    expect((await api.request('GET', `/tasks/${bobTask}/sub-tasks`, { token: alice })).status).toBe(404);
    const t = (await api.post(alice, '/tasks', { content: 'doomed' })).body.id;
    const sub = (await addSub(alice, t, { content: 'hidden' })).body.id;
    await api.request('DELETE', `/tasks/${t}`, { token: alice });
    expect((await api.request('GET', `/tasks/${t}/sub-tasks`, { token: alice })).status).toBe(404);
    expect((await api.request('GET', `/sub-tasks/${sub}`, { token: alice })).status).toBe(404);
    expect((await api.request('GET', `/tasks/${taskId}/sub-tasks`)).status).toBe(401);
    expect((await api.request('GET', `/tasks/${taskId}/sub-tasks`, { token: api.serviceToken })).status).toBe(403);
  });
});

describe('PATCH /sub-tasks/{id}', () => {
  it('should update the given fields and emit EntityChanged', async () => {
    const { body: s } = await addSub(alice, taskId, { content: 'draft', due_date: '2026-01-01' });
    const res = await api.request('PATCH', `/sub-tasks/${s.id}`, {
      token: alice,
      body: { status: 'completed', due_date: null, assigned_to: alicePerson },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: s.id,
      content: 'draft',
      status: 'completed',
      due_date: null,
      assigned_to: alicePerson,
    });
    expect(await api.lastEvent(aliceId)).toMatchObject({
      entity: 'sub_task',
      action: 'updated',
      id: s.id,
      meeting_id: meetingId,
    });
  });

  it.each([
    ['an empty body', {}],
    ['a null content', { content: null }],
    ['a moved task_id', { task_id: randomUUID() }],
    ["another user's person", { assigned_to: 'BOB_PERSON' }],
  ])('should answer 422 for %s', async (_name, raw) => {
    const { body: s } = await addSub(alice, taskId, { content: 'keep' });
    expect((await api.request('PATCH', `/sub-tasks/${s.id}`, { token: alice, body: resolve(raw) })).status).toBe(422);
    expect((await api.request('GET', `/sub-tasks/${s.id}`, { token: alice })).body).toEqual(s);
  });

  it("should answer 404 for another user's sub-task and 401/403 without a user token", async () => {
    expect((await api.request('PATCH', `/sub-tasks/${bobSub}`, { token: alice, body: { content: 'x' } })).status).toBe(
      404,
    );
    expect(
      (await api.request('PATCH', `/sub-tasks/${bobSub}`, { token: api.serviceToken, body: { content: 'x' } })).status,
    ).toBe(403);
    expect((await api.request('PATCH', `/sub-tasks/${bobSub}`, { body: { content: 'x' } })).status).toBe(401);
    expect((await api.request('GET', `/sub-tasks/${bobSub}`, { token: bob })).body.content).toBe('bob sub');
  });
});

describe('DELETE /sub-tasks/{id}', () => {
  it('should hard-delete the sub-task and emit EntityChanged', async () => {
    const { body: s } = await addSub(alice, taskId, { content: 'bye' });
    expect((await api.request('DELETE', `/sub-tasks/${s.id}`, { token: alice })).status).toBe(204);
    const { rows } = await api.rt.db.query('test.sub', 'SELECT 1 FROM sub_task WHERE id = $1', [s.id]);
    expect(rows).toHaveLength(0);
    expect(await api.lastEvent(aliceId)).toMatchObject({
      entity: 'sub_task',
      action: 'deleted',
      id: s.id,
      meeting_id: meetingId,
    });
    expect((await api.request('DELETE', `/sub-tasks/${s.id}`, { token: alice })).status).toBe(404);
  });

  it("should answer 404 for another user's sub-task and 401/403 without a user token", async () => {
    expect((await api.request('DELETE', `/sub-tasks/${bobSub}`, { token: alice })).status).toBe(404);
    expect((await api.request('DELETE', `/sub-tasks/${bobSub}`, { token: api.serviceToken })).status).toBe(403);
    expect((await api.request('DELETE', `/sub-tasks/${bobSub}`)).status).toBe(401);
    expect((await api.request('GET', `/sub-tasks/${bobSub}`, { token: bob })).status).toBe(200);
  });
});
