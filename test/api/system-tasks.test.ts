import type { QueryResultRow } from 'pg';
import { randomUUID } from 'node:crypto';
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
const key = () => ({ 'idempotency-key': randomUUID() });

const meeting = (token = alice) => api.meeting(token, 'recording');

const create = (meetingId: string, tasks: unknown, opts: { token?: string; headers?: Record<string, string> } = {}) =>
  api.request('POST', `/meetings/${meetingId}/tasks`, {
    token: opts.token ?? svc,
    body: { tasks },
    headers: opts.headers ?? key(),
  });

const live = (meetingId: string) =>
  sql('SELECT content, source FROM task WHERE meeting_id = $1 AND deleted_at IS NULL ORDER BY content', [meetingId]);

describe('POST /meetings/{id}/tasks', () => {
  it("should create system tasks owned by the meeting's user, in request order", async () => {
    const m = await meeting();
    const p = await api.person(aliceId);
    const res = await create(m, [
      { content: 'Send the proposal', due_date: '2026-12-01', assigned_to: p },
      { content: 'Book a room' },
    ]);
    expect(res.status).toBe(201);
    expect(res.body.items).toEqual([
      {
        id: expect.any(String),
        user_id: aliceId,
        content: 'Send the proposal',
        status: 'pending',
        source: 'system',
        due_date: '2026-12-01',
        assigned_to: p,
        meeting_id: m,
        parent_task_id: null,
        deleted_at: null,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
      expect.objectContaining({
        content: 'Book a room',
        source: 'system',
        due_date: null,
        assigned_to: null,
        user_id: aliceId,
      }),
    ]);
    const events = await sql<{ user_id: string; payload: { id: string } }>(
      `SELECT user_id, payload FROM event_outbox WHERE payload @> $1::jsonb ORDER BY seq`,
      [JSON.stringify({ type: 'EntityChanged', entity: 'task', action: 'created', meeting_id: m })],
    );
    expect(events.map((e) => [e.user_id, e.payload.id])).toEqual(res.body.items.map((t) => [aliceId, t.id]));
  });

  it('should replay an idempotent retry and require the key', async () => {
    const m = await meeting();
    const headers = key();
    const first = await create(m, [{ content: 'once' }], { headers });
    const again = await create(m, [{ content: 'once' }], { headers });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await live(m)).toHaveLength(1);
    expect((await api.request('POST', `/meetings/${m}/tasks`, { token: svc, body: { tasks: [] } })).status).toBe(400);
  });

  it("should answer 422 when assigned_to is another user's or an unknown person, creating nothing", async () => {
    const m = await meeting();
    const bobs = await api.person(bobId);
    const res = await create(m, [{ content: 'ok' }, { content: 'bad', assigned_to: bobs }]);
    expect(res.status).toBe(422);
    expect(res.body.errors![0].path).toBe('assigned_to');
    expect((await create(m, [{ content: 'bad', assigned_to: randomUUID() }])).status).toBe(422);
    expect(await live(m)).toHaveLength(0);
  });

  it('should validate the body', async () => {
    const m = await meeting();
    const bad = [
      [{}],
      [{ content: '' }],
      [{ content: 'x', due_date: '2026-02-30' }],
      [{ content: 'x', due_date: 'tomorrow' }],
      [{ content: 'x', assigned_to: 'nope' }],
      // An unknown field (ignored: the ML's bodies, decisions.md section 8) does not save the rest.
      [{ content: '', status: 'completed' }],
      'x',
    ];
    for (const tasks of bad) expect({ tasks, status: (await create(m, tasks)).status }).toEqual({ tasks, status: 422 });
    expect((await create(m, [])).body).toEqual({ items: [] });
  });

  it('should answer 404 for an unknown or deleted meeting, 403 for a user, 401 without auth', async () => {
    expect((await create(randomUUID(), [{ content: 'x' }])).status).toBe(404);
    const m = await meeting();
    expect((await create(m, [{ content: 'x' }], { token: alice })).status).toBe(403);
    expect((await api.request('POST', `/meetings/${m}/tasks`, { body: { tasks: [] }, headers: key() })).status).toBe(
      401,
    );
    await api.request('DELETE', `/meetings/${m}`, { token: alice });
    expect((await create(m, [{ content: 'x' }])).status).toBe(404);
  });
});

describe('DELETE /meetings/{id}/tasks?source=system', () => {
  it('should soft-delete only the system tasks of that meeting', async () => {
    const m = await meeting();
    const other = await meeting();
    await create(m, [{ content: 'sys a' }, { content: 'sys b' }]);
    await create(other, [{ content: 'sys other' }]);
    await sql(`INSERT INTO task (user_id, content, source, meeting_id) VALUES ($1, 'user task', 'user', $2)`, [
      aliceId,
      m,
    ]);
    const res = await api.request('DELETE', `/meetings/${m}/tasks?source=system`, { token: svc });
    expect(res.status).toBe(204);
    expect(await live(m)).toEqual([{ content: 'user task', source: 'user' }]);
    expect(await live(other)).toEqual([{ content: 'sys other', source: 'system' }]);
    const deleted = await sql(
      `SELECT count(*)::int AS n FROM task WHERE meeting_id = $1 AND deleted_at IS NOT NULL AND source = 'system'`,
      [m],
    );
    expect(deleted[0].n).toBe(2);
    const events = await sql(`SELECT payload FROM event_outbox WHERE payload @> $1::jsonb`, [
      JSON.stringify({ entity: 'task', action: 'deleted', meeting_id: m }),
    ]);
    expect(events).toHaveLength(2);
    // Nothing left to delete is still a success.
    expect((await api.request('DELETE', `/meetings/${m}/tasks?source=system`, { token: svc })).status).toBe(204);
  });

  it('should answer 422 for any other or a missing source', async () => {
    const m = await meeting();
    await create(m, [{ content: 'sys' }]);
    for (const q of ['?source=user', '?source=SYSTEM', '?source=', '']) {
      expect({ q, status: (await api.request('DELETE', `/meetings/${m}/tasks${q}`, { token: svc })).status }).toEqual({
        q,
        status: 422,
      });
    }
    expect(await live(m)).toHaveLength(1);
  });

  it('should answer 404 for an unknown meeting, 403 for a user, 401 without auth', async () => {
    expect((await api.request('DELETE', `/meetings/${randomUUID()}/tasks?source=system`, { token: svc })).status).toBe(
      404,
    );
    const m = await meeting();
    expect((await api.request('DELETE', `/meetings/${m}/tasks?source=system`, { token: alice })).status).toBe(403);
    expect((await api.request('DELETE', `/meetings/${m}/tasks?source=system`)).status).toBe(401);
  });
});
