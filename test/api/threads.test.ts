import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMessage } from '@mi/lib/repositories/threads';
import { startApi, type ApiHarness } from '../harness';
import { twoUsers, type TwoUsers } from './fixture';

let api: ApiHarness;
let alice: string;
let bob: string;
let aliceId: string;
let alicePerson: string;
let aliceMeeting: string;
let bobThread: string;
let bobMessage: string;
let resolve: TwoUsers['resolve'];

const createThread = (token: string, body: unknown, key?: string) => api.post(token, '/threads', body, key);
const say = (token: string, thread: string, body: unknown, key?: string) =>
  api.post(token, `/threads/${thread}/messages`, body, key);

beforeAll(async () => {
  api = await startApi();
  ({ alice, bob, aliceId, alicePerson, aliceMeeting, resolve } = await twoUsers(api));
  bobThread = (await createThread(bob, {})).body.id;
  bobMessage = (await say(bob, bobThread, { role: 'user', content: 'bob asks' })).body.id;
});
afterAll(() => api?.close());

describe('POST /threads', () => {
  it('should create a thread about a meeting and emit EntityChanged with its meeting_id', async () => {
    const res = await createThread(alice, { context_type: 'MEETING', context_id: aliceMeeting });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      user_id: aliceId,
      context_type: 'MEETING',
      context_id: aliceMeeting,
      deleted_at: null,
      created_at: expect.any(String),
    });
    expect(await api.lastEvent(aliceId)).toMatchObject({
      type: 'EntityChanged',
      entity: 'ai_thread',
      action: 'created',
      id: res.body.id,
      meeting_id: aliceMeeting,
    });
    expect((await api.request('GET', `/threads/${res.body.id}`, { token: alice })).body).toEqual(res.body);
  });

  it('should create a thread without context and replay a repeated Idempotency-Key', async () => {
    const key = randomUUID();
    const first = await createThread(alice, {}, key);
    expect(first.body).toMatchObject({ context_type: null, context_id: null });
    const again = await createThread(alice, {}, key);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect((await api.request('POST', '/threads', { token: alice, body: {} })).status).toBe(400);
  });

  describe.each([
    ['an unknown context_type', { context_type: 'TASK', context_id: 'ALICE_MEETING' }, 'context_type'],
    ['context_type alone', { context_type: 'PERSON' }, 'context_id'],
    ['context_id alone', { context_id: 'ALICE_PERSON' }, 'context_id'],
    ["another user's person", { context_type: 'PERSON', context_id: 'BOB_PERSON' }, 'context_id'],
    ["another user's meeting", { context_type: 'MEETING', context_id: 'BOB_MEETING' }, 'context_id'],
    ['an unknown field', { title: 'x' }, '(body)'],
  ])('with %s', (_name, body, field) => {
    it(`should answer 422 naming ${field}`, async () => {
      const res = await createThread(alice, resolve(body));
      expect(res.status).toBe(422);
      expect(res.body.errors!.map((e) => e.path)).toContain(field);
    });
  });

  it('should answer 401 without credentials and 403 for the service scheme', async () => {
    expect((await createThread('', {})).status).toBe(401);
    expect((await createThread(api.serviceToken, {})).status).toBe(403);
  });
});

describe('GET /threads', () => {
  it('should list only the caller live threads, newest first, filtered and paginated', async () => {
    const carol = await api.token('carol');
    const m = await api.meeting(carol);
    const t1 = (await createThread(carol, { context_type: 'MEETING', context_id: m })).body.id;
    const t2 = (await createThread(carol, {})).body.id;
    const t3 = (await createThread(carol, {})).body.id;
    const gone = (await createThread(carol, {})).body.id;
    await api.request('DELETE', `/threads/${gone}`, { token: carol });
    const all = await api.request('GET', '/threads', { token: carol });
    expect(all.status).toBe(200);
    expect(all.body.items.map((t) => t.id)).toEqual([t3, t2, t1]);
    const first = await api.request('GET', '/threads?limit=2', { token: carol });
    const rest = await api.request('GET', `/threads?limit=2&cursor=${first.body.next_cursor}`, { token: carol });
    expect([...first.body.items, ...rest.body.items].map((t) => t.id)).toEqual([t3, t2, t1]);
    expect(rest.body.next_cursor).toBeNull();
    const about = await api.request('GET', `/threads?context_type=MEETING&context_id=${m}`, { token: carol });
    expect(about.body.items.map((t) => t.id)).toEqual([t1]);
  });

  it.each([
    ['a bad cursor', '?cursor=abc', 400],
    ['a bad context_type', '?context_type=meeting', 422],
    ['a bad limit', '?limit=abc', 422],
  ])('should reject %s', async (_name, query, status) => {
    expect((await api.request('GET', `/threads${query}`, { token: alice })).status).toBe(status);
  });

  it('should answer 401 without credentials and 403 for the service scheme', async () => {
    expect((await api.request('GET', '/threads')).status).toBe(401);
    expect((await api.request('GET', '/threads', { token: api.serviceToken })).status).toBe(403);
  });
});

describe('GET and DELETE /threads/{id}', () => {
  it('should soft-delete a thread, hiding it and its messages, and emit EntityChanged', async () => {
    const t = (await createThread(alice, { context_type: 'MEETING', context_id: aliceMeeting })).body.id;
    const msg = (await say(alice, t, { role: 'user', content: 'hi' })).body.id;
    expect((await api.request('DELETE', `/threads/${t}`, { token: alice })).status).toBe(204);
    expect(await api.lastEvent(aliceId)).toMatchObject({
      entity: 'ai_thread',
      action: 'deleted',
      id: t,
      meeting_id: aliceMeeting,
    });
    expect((await api.request('GET', `/threads/${t}`, { token: alice })).status).toBe(404);
    expect((await api.request('GET', `/threads/${t}/messages`, { token: alice })).status).toBe(404);
    expect((await say(alice, t, { role: 'user', content: 'again' })).status).toBe(404);
    expect((await api.request('DELETE', `/threads/${t}/messages/${msg}`, { token: alice })).status).toBe(404);
    const { rows } = await api.rt.db.query('test.thread', 'SELECT deleted_at FROM ai_thread WHERE id = $1', [t]);
    expect(rows[0].deleted_at).not.toBeNull();
    expect((await api.request('DELETE', `/threads/${t}`, { token: alice })).status).toBe(404);
  });

  it("should answer 404 for another user's thread and 401/403 without a user token", async () => {
    for (const method of ['GET', 'DELETE']) {
      expect((await api.request(method, `/threads/${bobThread}`, { token: alice })).status).toBe(404);
      expect((await api.request(method, `/threads/${bobThread}`, { token: api.serviceToken })).status).toBe(403);
      expect((await api.request(method, `/threads/${bobThread}`)).status).toBe(401);
    }
    expect((await api.request('GET', `/threads/${bobThread}`, { token: bob })).status).toBe(200);
  });
});

describe('thread messages', () => {
  it('should append messages, list them oldest first across pages, and emit EntityChanged', async () => {
    const t = (await createThread(alice, { context_type: 'PERSON', context_id: alicePerson })).body.id;
    const toolCalls = [{ id: 'call_1', type: 'function', function: { name: 'search', arguments: '{"q":"launch"}' } }];
    const first = await say(alice, t, { role: 'user', content: 'When is the launch?' });
    expect(first.status).toBe(201);
    expect(first.body).toEqual({
      id: expect.any(String),
      thread_id: t,
      role: 'user',
      content: 'When is the launch?',
      tool_calls: null,
      deleted_at: null,
      created_at: expect.any(String),
    });
    expect(await api.lastEvent(aliceId)).toMatchObject({
      entity: 'chat_message',
      action: 'created',
      id: first.body.id,
      meeting_id: null,
    });
    const assistant = await say(alice, t, { role: 'assistant', content: '', tool_calls: toolCalls });
    expect(assistant.body.tool_calls).toEqual(toolCalls);
    await say(alice, t, { role: 'tool', content: 'March 3' });
    await say(alice, t, { role: 'assistant', content: 'On March 3.' });
    const roles: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await api.request('GET', `/threads/${t}/messages?limit=3${cursor ? `&cursor=${cursor}` : ''}`, {
        token: alice,
      });
      expect(page.status).toBe(200);
      roles.push(...page.body.items.map((m) => m.role));
      cursor = page.body.next_cursor as string | null;
    } while (cursor);
    expect(roles).toEqual(['user', 'assistant', 'tool', 'assistant']);
  });

  it('should keep creation order for messages written within the same millisecond', async () => {
    const t = (await createThread(alice, {})).body.id;
    await api.rt.db.withTransaction(async (tx) => {
      for (let i = 0; i < 20; i++) await addMessage(tx, t, { role: 'user', content: String(i) });
    });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await api.request('GET', `/threads/${t}/messages?limit=7${cursor ? `&cursor=${cursor}` : ''}`, {
        token: alice,
      });
      seen.push(...page.body.items.map((m) => m.content));
      cursor = page.body.next_cursor as string | null;
    } while (cursor);
    expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
  });

  it('should replay a repeated Idempotency-Key without a second message', async () => {
    const t = (await createThread(alice, {})).body.id;
    const key = randomUUID();
    const a = await say(alice, t, { role: 'user', content: 'once' }, key);
    const b = await say(alice, t, { role: 'user', content: 'once' }, key);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    expect(b.body).toEqual(a.body);
    expect((await api.request('GET', `/threads/${t}/messages`, { token: alice })).body.items).toHaveLength(1);
    expect(
      (await api.request('POST', `/threads/${t}/messages`, { token: alice, body: { role: 'user', content: 'x' } }))
        .status,
    ).toBe(400);
  });

  describe.each([
    ['an unknown role', { role: 'bot', content: 'x' }, 'role'],
    ['a missing role', { content: 'x' }, 'role'],
    ['a missing content', { role: 'user' }, 'content'],
    ['a non-string content', { role: 'user', content: ['x'] }, 'content'],
    ['an unknown field', { role: 'user', content: 'x', deleted_at: null }, '(body)'],
  ])('with %s', (_name, body, field) => {
    it(`should answer 422 naming ${field}`, async () => {
      const t = (await createThread(alice, {})).body.id;
      const res = await say(alice, t, body);
      expect(res.status).toBe(422);
      expect(res.body.errors!.map((e) => e.path)).toContain(field);
    });
  });

  it('should soft-delete a message, hiding it from the list', async () => {
    const t = (await createThread(alice, { context_type: 'MEETING', context_id: aliceMeeting })).body.id;
    const keep = (await say(alice, t, { role: 'user', content: 'keep' })).body.id;
    const drop = (await say(alice, t, { role: 'user', content: 'drop' })).body.id;
    expect((await api.request('DELETE', `/threads/${t}/messages/${drop}`, { token: alice })).status).toBe(204);
    expect(await api.lastEvent(aliceId)).toMatchObject({
      entity: 'chat_message',
      action: 'deleted',
      id: drop,
      meeting_id: aliceMeeting,
    });
    expect((await api.request('GET', `/threads/${t}/messages`, { token: alice })).body.items.map((m) => m.id)).toEqual([
      keep,
    ]);
    const { rows } = await api.rt.db.query('test.msg', 'SELECT deleted_at FROM chat_message WHERE id = $1', [drop]);
    expect(rows[0].deleted_at).not.toBeNull();
    expect((await api.request('DELETE', `/threads/${t}/messages/${drop}`, { token: alice })).status).toBe(404);
    // A message id under a thread it does not belong to is not found.
    const other = (await createThread(alice, {})).body.id;
    expect((await api.request('DELETE', `/threads/${other}/messages/${keep}`, { token: alice })).status).toBe(404);
  });

  it("should answer 404 for another user's thread or message and 401/403 without a user token", async () => {
    expect((await say(alice, bobThread, { role: 'user', content: 'x' })).status).toBe(404);
    expect((await api.request('GET', `/threads/${bobThread}/messages`, { token: alice })).status).toBe(404);
    expect((await api.request('DELETE', `/threads/${bobThread}/messages/${bobMessage}`, { token: alice })).status).toBe(
      404,
    );
    expect((await say(api.serviceToken, bobThread, { role: 'user', content: 'x' })).status).toBe(403);
    expect((await api.request('GET', `/threads/${bobThread}/messages`, { token: api.serviceToken })).status).toBe(403);
    expect((await api.request('DELETE', `/threads/${bobThread}/messages/${bobMessage}`)).status).toBe(401);
    expect(
      (
        await api.request(
          'GET',
          `/threads/${bobThread}/messages?cursor=${Buffer.from('["x"]').toString('base64url')}`,
          { token: bob },
        )
      ).status,
    ).toBe(400);
    expect(
      (await api.request('GET', `/threads/${bobThread}/messages`, { token: bob })).body.items.map((m) => m.id),
    ).toEqual([bobMessage]);
  });
});
