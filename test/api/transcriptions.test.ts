import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let alice: string;
let bob: string;
let svc: string;

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('alice');
  bob = await api.token('bob');
  svc = api.serviceToken;
});
afterAll(() => api?.close());

const key = () => ({ 'idempotency-key': randomUUID() });

async function meeting(token = alice): Promise<string> {
  const res = await api.request('POST', '/meetings', {
    token,
    body: { title: 'm', source_type: 'recording' },
    headers: key(),
  });
  expect(res.status).toBe(201);
  return res.body.id;
}

async function transcription(meetingId: string, token = alice): Promise<any> {
  const res = await api.request('POST', `/meetings/${meetingId}/transcriptions`, { token, headers: key() });
  expect(res.status).toBe(201);
  return res.body;
}

const patch = (id: string, body: unknown, token = svc) =>
  api.request('PATCH', `/transcriptions/${id}`, { token, body });

async function historyRows(id: string): Promise<number> {
  const { rows } = await api.rt.db.query<{ n: number }>(
    't',
    'SELECT count(*)::int AS n FROM transcription_status_history WHERE transcription_id = $1',
    [id],
  );
  return rows[0].n;
}

async function outbox(type: string, match: Record<string, unknown>): Promise<any[]> {
  const { rows } = await api.rt.db.query(
    't',
    'SELECT payload FROM event_outbox WHERE event_type = $1 AND payload @> $2::jsonb ORDER BY seq',
    [type, JSON.stringify(match)],
  );
  return rows.map((r) => r.payload);
}

describe('create, get, list', () => {
  it('should create a pending transcription with 201 and read it back', async () => {
    const m = await meeting();
    const t = await transcription(m);
    expect(t).toEqual({
      id: expect.any(String),
      meeting_id: m,
      status: 'pending',
      status_message: null,
      is_degraded: false,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const got = await api.request('GET', `/transcriptions/${t.id}`, { token: alice });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(t);
    expect((await api.request('GET', `/transcriptions/${t.id}`, { token: svc })).body).toEqual(t);
    expect(
      await outbox('EntityChanged', { entity: 'transcription', action: 'created', id: t.id, meeting_id: m }),
    ).toHaveLength(1);
    const history = await api.request('GET', `/transcriptions/${t.id}/status-history`, { token: alice });
    expect(history.body.items.map((h) => h.status)).toEqual(['pending']);
  });

  it('should let the service create one too, and replay an idempotent retry', async () => {
    const m = await meeting();
    const headers = key();
    const first = await api.request('POST', `/meetings/${m}/transcriptions`, { token: svc, headers });
    const again = await api.request('POST', `/meetings/${m}/transcriptions`, { token: svc, headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    const list = await api.request('GET', `/meetings/${m}/transcriptions`, { token: alice });
    expect(list.body.items).toHaveLength(1);
  });

  it('should require an Idempotency-Key', async () => {
    const m = await meeting();
    expect((await api.request('POST', `/meetings/${m}/transcriptions`, { token: alice })).status).toBe(400);
  });

  it('should list a meeting transcriptions oldest first with a cursor', async () => {
    const m = await meeting();
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await transcription(m)).id);
    const first = await api.request('GET', `/meetings/${m}/transcriptions?limit=2`, { token: alice });
    expect(first.body.items.map((t) => t.id)).toEqual(ids.slice(0, 2));
    const second = await api.request('GET', `/meetings/${m}/transcriptions?limit=2&cursor=${first.body.next_cursor}`, {
      token: svc,
    });
    expect(second.body).toEqual({ items: [expect.objectContaining({ id: ids[2] })], next_cursor: null });
    expect((await api.request('GET', `/meetings/${m}/transcriptions?cursor=garbage`, { token: alice })).status).toBe(
      400,
    );
  });

  it('should answer 404 for an unknown, foreign or deleted meeting and a foreign transcription', async () => {
    const m = await meeting();
    const t = await transcription(m);
    for (const token of [bob]) {
      expect((await api.request('POST', `/meetings/${m}/transcriptions`, { token, headers: key() })).status).toBe(404);
      expect((await api.request('GET', `/meetings/${m}/transcriptions`, { token })).status).toBe(404);
      expect((await api.request('GET', `/transcriptions/${t.id}`, { token })).status).toBe(404);
      expect((await api.request('GET', `/transcriptions/${t.id}/status-history`, { token })).status).toBe(404);
    }
    expect(
      (await api.request('POST', `/meetings/${randomUUID()}/transcriptions`, { token: svc, headers: key() })).status,
    ).toBe(404);
    expect((await api.request('GET', `/transcriptions/${randomUUID()}`, { token: svc })).status).toBe(404);
    expect((await api.request('DELETE', `/meetings/${m}`, { token: alice })).status).toBe(204);
    expect((await api.request('POST', `/meetings/${m}/transcriptions`, { token: alice, headers: key() })).status).toBe(
      404,
    );
    expect((await api.request('GET', `/transcriptions/${t.id}`, { token: alice })).status).toBe(404);
    expect((await api.request('GET', `/transcriptions/${t.id}`, { token: svc })).status).toBe(404);
  });

  it('should answer 401 without credentials and 422 for a non-uuid id', async () => {
    const m = await meeting();
    expect((await api.request('POST', `/meetings/${m}/transcriptions`, { headers: key() })).status).toBe(401);
    expect((await api.request('GET', `/transcriptions/${randomUUID()}`)).status).toBe(401);
    expect((await api.request('GET', '/transcriptions/nope', { token: alice })).status).toBe(422);
  });
});

describe('PATCH and the status machine', () => {
  const S = ['pending', 'transcribing', 'synthesizing', 'completed', 'failed'] as const;
  const allowed: Record<string, string[]> = {
    pending: ['transcribing', 'failed'],
    transcribing: ['synthesizing', 'failed'],
    synthesizing: ['completed', 'failed'],
    completed: ['transcribing'],
    failed: ['transcribing'],
  };

  it('should allow exactly the pinned transitions (the full table)', async () => {
    const m = await meeting();
    for (const from of S) {
      for (const to of S) {
        const t = await transcription(m);
        await api.rt.db.query('t', 'UPDATE transcription SET status = $2 WHERE id = $1', [t.id, from]);
        const before = await historyRows(t.id);
        const res = await patch(t.id, { status: to, status_message: `${from}->${to}` });
        // synthesizing → synthesizing is the batch claim taken twice: refused (decisions.md section 7).
        const ok = (from === to && to !== 'synthesizing') || allowed[from].includes(to);
        expect({ from, to, status: res.status }).toEqual({ from, to, status: ok ? 200 : 409 });
        const after = await historyRows(t.id);
        expect({ from, to, added: after - before }).toEqual({ from, to, added: ok && from !== to ? 1 : 0 });
        const now = (await api.request('GET', `/transcriptions/${t.id}`, { token: svc })).body.status;
        expect(now).toBe(ok ? to : from);
      }
    }
  });

  it('should let exactly one of concurrent batch claims (PATCH to synthesizing) through; the others 409 invalid_state', async () => {
    const t = await transcription(await meeting());
    expect((await patch(t.id, { status: 'transcribing' })).status).toBe(200);
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => patch(t.id, { status: 'synthesizing', status_message: `pass ${i}` })),
    );
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 409, 409, 409, 409, 409]);
    for (const r of answers.filter((a) => a.status === 409)) {
      expect(r.body).toMatchObject({
        status: 409,
        type: expect.stringMatching(/\/conflict$/),
        detail: expect.stringContaining('already synthesizing'),
      });
    }
    expect(await historyRows(t.id)).toBe(3);
  });

  it('should record every change in the status history, oldest first', async () => {
    const t = await transcription(await meeting());
    for (const status of ['transcribing', 'synthesizing', 'completed', 'transcribing', 'failed']) {
      const res = await patch(t.id, { status, status_message: `now ${status}` });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: t.id, status, status_message: `now ${status}` });
    }
    const history = await api.request('GET', `/transcriptions/${t.id}/status-history`, { token: alice });
    expect(history.status).toBe(200);
    expect(history.body.items.map((h) => [h.status, h.status_message])).toEqual([
      ['pending', null],
      ['transcribing', 'now transcribing'],
      ['synthesizing', 'now synthesizing'],
      ['completed', 'now completed'],
      ['transcribing', 'now transcribing'],
      ['failed', 'now failed'],
    ]);
    const paged = await api.request('GET', `/transcriptions/${t.id}/status-history?limit=4`, { token: svc });
    const rest = await api.request(
      'GET',
      `/transcriptions/${t.id}/status-history?limit=4&cursor=${paged.body.next_cursor}`,
      { token: svc },
    );
    expect([...paged.body.items, ...rest.body.items]).toEqual(history.body.items);
    expect(await outbox('EntityChanged', { entity: 'transcription', action: 'updated', id: t.id })).toHaveLength(5);
  });

  it('should update is_degraded and status_message without a history row', async () => {
    const t = await transcription(await meeting());
    const res = await patch(t.id, { is_degraded: true, status_message: 'gap at 00:10' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'pending', is_degraded: true, status_message: 'gap at 00:10' });
    expect(await historyRows(t.id)).toBe(1);
    expect((await patch(t.id, { status_message: null })).body.status_message).toBeNull();
  });

  it('should validate the body and answer 404 for an unknown transcription', async () => {
    const t = await transcription(await meeting());
    expect((await patch(t.id, {})).status).toBe(422);
    expect((await patch(t.id, { status: 'done' })).status).toBe(422);
    expect((await patch(t.id, { is_degraded: 'yes' })).status).toBe(422);
    // The ML's bodies ignore unknown fields (decisions.md section 8); the rest is validated as ever.
    expect((await patch(t.id, { status: 'done', extra: 1 })).status).toBe(422);
    expect((await patch(t.id, '{"status":')).status).toBe(400);
    expect((await patch(randomUUID(), { status: 'failed' })).status).toBe(404);
  });

  it('should accept only the service scheme', async () => {
    const t = await transcription(await meeting());
    expect((await patch(t.id, { status: 'failed' }, alice)).status).toBe(403);
    expect((await api.request('PATCH', `/transcriptions/${t.id}`, { body: { status: 'failed' } })).status).toBe(401);
  });
});

describe('OpenAPI document', () => {
  it('should list the ML-facing operations with their schemes', async () => {
    const { body } = await api.request('GET', '/openapi.json');
    const sec = (path: string, method: string) => body.paths[path]?.[method]?.security;
    const bearerOrService = [{ bearerAuth: [] }, { serviceAuth: [] }];
    const service = [{ serviceAuth: [] }];
    expect(sec('/meetings/{id}/transcriptions', 'post')).toEqual(bearerOrService);
    expect(sec('/meetings/{id}/transcriptions', 'get')).toEqual(bearerOrService);
    expect(sec('/transcriptions/{id}', 'get')).toEqual(bearerOrService);
    expect(sec('/transcriptions/{id}', 'patch')).toEqual(service);
    expect(sec('/transcriptions/{id}/status-history', 'get')).toEqual(bearerOrService);
    expect(sec('/transcriptions/{id}/segments', 'post')).toEqual(service);
    expect(sec('/transcriptions/{id}/segments', 'put')).toEqual(service);
    expect(sec('/transcriptions/{id}/segments', 'get')).toEqual(bearerOrService);
    expect(sec('/meetings/{id}/talking-points', 'post')).toEqual(service);
    expect(sec('/meetings/{id}/talking-points', 'get')).toEqual([{ bearerAuth: [] }]);
    expect(sec('/talking-points/{id}', 'delete')).toEqual([{ bearerAuth: [] }]);
    expect(sec('/meetings/{id}/synthesis', 'put')).toEqual(service);
    expect(sec('/meetings/{id}/topics', 'get')).toEqual(bearerOrService);
    expect(sec('/meetings/{id}/tasks', 'post')).toEqual(service);
    expect(sec('/meetings/{id}/tasks', 'delete')).toEqual(service);
    expect(body.paths['/transcriptions/{id}/segments'].put.responses).toHaveProperty('409');
    expect(body.paths['/transcriptions/{id}/segments'].put.responses).toHaveProperty('413');
  });
});
