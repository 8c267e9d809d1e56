import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let alice: string;
let bob: string;
let aliceId: string;

const create = (token: string, body: unknown, key: string = randomUUID()) =>
  api.request('POST', '/people', { token, body, headers: { 'idempotency-key': key } });
const sql = (text: string, params: unknown[] = []) => api.rt.db.query('test.sql', text, params).then((r) => r.rows);
const lastEvents = async (userId: string, n: number) =>
  (await sql('SELECT payload FROM event_outbox WHERE user_id = $1 ORDER BY seq DESC LIMIT $2', [userId, n]))
    .map((r) => r.payload)
    .reverse();

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('alice');
  bob = await api.token('bob');
  aliceId = (await api.request('GET', '/me', { token: alice })).body.id;
});
afterAll(() => api?.close());

describe('POST /people', () => {
  it('should create a person with every field and emit EntityChanged', async () => {
    const body = {
      display_name: 'Ada',
      full_name: 'Ada Lovelace',
      title: 'Engineer',
      role: 'lead',
      email: 'ada@example.com',
      company: 'AE',
      tags: ['vip', { k: 1 }],
    };
    const res = await create(alice, body);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      ...body,
      id: expect.any(String),
      user_id: aliceId,
      voice_model_status: 'untrained',
      voice_confidence: null,
      voice_vector: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const got = await api.request('GET', `/people/${res.body.id}`, { token: alice });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
    expect(await lastEvents(aliceId, 1)).toEqual([
      { type: 'EntityChanged', entity: 'person', action: 'created', id: res.body.id, meeting_id: null },
    ]);
  });

  it('should answer 409 to a display_name the user already has, but not to another user', async () => {
    expect((await create(alice, { display_name: 'Twin' })).status).toBe(201);
    const dup = await create(alice, { display_name: 'Twin' });
    expect(dup.status).toBe(409);
    expect(dup.headers.get('content-type')).toContain('application/problem+json');
    expect((await create(bob, { display_name: 'Twin' })).status).toBe(201);
  });

  it('should reject voice fields, unknown fields and bad types with 422', async () => {
    for (const body of [
      { display_name: 'V', voice_vector: Array(192).fill(0.1) },
      { display_name: 'V', voice_model_status: 'ready' },
      { display_name: 'V', nope: 1 },
      { display_name: '' },
      { display_name: 42 },
      { display_name: 'x'.repeat(201) },
      {},
      [],
    ]) {
      expect((await create(alice, body)).status, JSON.stringify(body).slice(0, 60)).toBe(422);
    }
  });

  it('should replay the first response for the same Idempotency-Key', async () => {
    const key = randomUUID();
    const first = await create(alice, { display_name: 'Once' }, key);
    const again = await create(alice, { display_name: 'Once' }, key);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect((await create(alice, { display_name: 'Other' }, key)).status).toBe(422);
    expect((await api.request('POST', '/people', { token: alice, body: { display_name: 'NoKey' } })).status).toBe(400);
  });
});

describe('GET /people', () => {
  it('should list only the caller people by display_name, filtered and paginated', async () => {
    const carol = await api.token('carol');
    for (const [d, f] of [
      ['Cleo', 'Cleopatra VII'],
      ['bert', null],
      ['Anna', 'Anna Karenina'],
      ['Zed', 'Karl Z'],
      ['50%_off', null],
    ]) {
      expect((await create(carol, { display_name: d, full_name: f })).status).toBe(201);
    }
    await create(bob, { display_name: 'Anna (bob)' });
    const all: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await api.request('GET', `/people?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { token: carol });
      expect(res.status).toBe(200);
      expect(res.body.items.length).toBeLessThanOrEqual(2);
      for (const p of res.body.items) expect(p).not.toHaveProperty('voice_vector');
      all.push(...res.body.items.map((p) => p.display_name));
      cursor = res.body.next_cursor as string | null;
    } while (cursor);
    const { rows } = await api.rt.db.query(
      'test.order',
      `SELECT display_name FROM person WHERE display_name = ANY($1) ORDER BY display_name`,
      [all],
    );
    expect(all).toEqual(rows.map((r) => r.display_name));
    expect(all.sort()).toEqual(['50%_off', 'Anna', 'Cleo', 'Zed', 'bert'].sort());

    const q = await api.request('GET', '/people?q=KAR', { token: carol });
    expect(q.body.items.map((p) => p.display_name).sort()).toEqual(['Anna', 'Zed']);
    // LIKE wildcards in q are literal.
    const pct = await api.request('GET', `/people?q=${encodeURIComponent('%_')}`, { token: carol });
    expect(pct.body.items.map((p) => p.display_name)).toEqual(['50%_off']);
  });

  it('should answer 400 to a bad cursor and 422 to a bad limit', async () => {
    expect((await api.request('GET', '/people?cursor=garbage', { token: alice })).status).toBe(400);
    expect((await api.request('GET', '/people?limit=0', { token: alice })).status).toBe(422);
    expect((await api.request('GET', '/people?limit=201', { token: alice })).status).toBe(422);
  });
});

describe('GET, PATCH, DELETE /people/{id}', () => {
  it('should patch user fields and refuse voice fields', async () => {
    const { body } = await create(alice, { display_name: 'Pat', company: 'Old' });
    const res = await api.request('PATCH', `/people/${body.id}`, {
      token: alice,
      body: { company: 'New', title: null, tags: { team: 'x' } },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ display_name: 'Pat', company: 'New', title: null, tags: { team: 'x' } });
    expect(Date.parse(res.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(body.updated_at));
    expect(
      (await api.request('PATCH', `/people/${body.id}`, { token: alice, body: { voice_confidence: 1 } })).status,
    ).toBe(422);
    expect((await api.request('PATCH', `/people/${body.id}`, { token: alice, body: {} })).status).toBe(422);
    expect((await lastEvents(aliceId, 1))[0]).toEqual({
      type: 'EntityChanged',
      entity: 'person',
      action: 'updated',
      id: body.id,
      meeting_id: null,
    });
  });

  it('should answer 409 when renaming onto an existing display_name', async () => {
    await create(alice, { display_name: 'Taken' });
    const { body } = await create(alice, { display_name: 'Free' });
    expect(
      (await api.request('PATCH', `/people/${body.id}`, { token: alice, body: { display_name: 'Taken' } })).status,
    ).toBe(409);
  });

  it('should answer another user with 404 as if the person did not exist', async () => {
    const { body } = await create(alice, { display_name: 'Private' });
    expect((await api.request('GET', `/people/${body.id}`, { token: bob })).status).toBe(404);
    expect((await api.request('PATCH', `/people/${body.id}`, { token: bob, body: { title: 'x' } })).status).toBe(404);
    expect((await api.request('DELETE', `/people/${body.id}`, { token: bob })).status).toBe(404);
    expect((await api.request('GET', `/people/${body.id}`, { token: alice })).body.title).toBeNull();
    expect((await api.request('GET', `/people/${randomUUID()}`, { token: alice })).status).toBe(404);
    expect((await api.request('GET', '/people/not-a-uuid', { token: alice })).status).toBe(422);
  });

  it('should let the service read any person', async () => {
    const { body } = await create(alice, { display_name: 'ForML' });
    const res = await api.request('GET', `/people/${body.id}`, { token: api.serviceToken });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(body.id);
  });

  it('should hard-delete and detach the person everywhere', async () => {
    const { body: person } = await create(alice, { display_name: 'Leaver' });
    const meeting = (
      await api.request('POST', '/meetings', {
        token: alice,
        body: { title: 'm', source_type: 'text' },
        headers: { 'idempotency-key': randomUUID() },
      })
    ).body;
    const [t] = await sql(`INSERT INTO transcription (meeting_id, status) VALUES ($1, 'completed') RETURNING id`, [
      meeting.id,
    ]);
    const [seg] = await sql(
      `INSERT INTO transcript_segment (transcription_id, person_id, speaker_label, text, start_ms) VALUES ($1, $2, 'S0', 'hi', 0) RETURNING id`,
      [t.id, person.id],
    );
    await sql(`INSERT INTO meeting_speaker_label (meeting_id, speaker_label, person_id) VALUES ($1, 'S0', $2)`, [
      meeting.id,
      person.id,
    ]);
    await sql(`INSERT INTO person_summary (person_id, author_id, summary) VALUES ($1, $2, 's')`, [person.id, aliceId]);
    expect((await api.request('PUT', '/me/person', { token: alice, body: { person_id: person.id } })).status).toBe(200);

    const res = await api.request('DELETE', `/people/${person.id}`, { token: alice });
    expect(res.status).toBe(204);
    expect((await api.request('GET', `/people/${person.id}`, { token: alice })).status).toBe(404);
    expect((await sql('SELECT person_id FROM transcript_segment WHERE id = $1', [seg.id]))[0].person_id).toBeNull();
    expect(await sql('SELECT 1 FROM meeting_speaker_label WHERE person_id = $1', [person.id])).toHaveLength(0);
    expect(await sql('SELECT 1 FROM person_summary WHERE person_id = $1', [person.id])).toHaveLength(0);
    expect((await api.request('GET', '/me', { token: alice })).body.person_id).toBeNull();
    expect((await lastEvents(aliceId, 1))[0]).toEqual({
      type: 'EntityChanged',
      entity: 'person',
      action: 'deleted',
      id: person.id,
      meeting_id: null,
    });
    expect((await api.request('DELETE', `/people/${person.id}`, { token: alice })).status).toBe(404);
  });
});

describe('PUT /me/person', () => {
  it("should set and clear the caller's own person", async () => {
    const { body: me } = await create(alice, { display_name: 'Me myself' });
    const set = await api.request('PUT', '/me/person', { token: alice, body: { person_id: me.id } });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ id: aliceId, person_id: me.id });
    expect((await api.request('GET', '/me', { token: alice })).body.person_id).toBe(me.id);
    expect((await lastEvents(aliceId, 1))[0]).toEqual({
      type: 'EntityChanged',
      entity: 'user',
      action: 'updated',
      id: aliceId,
      meeting_id: null,
    });
    const cleared = await api.request('PUT', '/me/person', { token: alice, body: { person_id: null } });
    expect(cleared.body.person_id).toBeNull();
  });

  it("should answer 422 for another user's person or an unknown id", async () => {
    const { body: bobs } = await create(bob, { display_name: 'Bobs own' });
    for (const person_id of [bobs.id, randomUUID()]) {
      const res = await api.request('PUT', '/me/person', { token: alice, body: { person_id } });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual([{ path: 'person_id', message: expect.any(String) }]);
    }
    expect((await api.request('PUT', '/me/person', { token: alice, body: { person_id: 'x' } })).status).toBe(422);
    expect((await api.request('PUT', '/me/person', { token: alice, body: {} })).status).toBe(422);
  });
});

describe('security', () => {
  it('should answer 401 without credentials and 403 to the service scheme on user-only operations', async () => {
    const id = randomUUID();
    for (const [m, p] of [
      ['GET', '/people'],
      ['POST', '/people'],
      ['GET', `/people/${id}`],
      ['PATCH', `/people/${id}`],
      ['DELETE', `/people/${id}`],
      ['PUT', '/me/person'],
    ]) {
      expect((await api.request(m, p, { body: m === 'GET' ? undefined : {} })).status, `${m} ${p}`).toBe(401);
    }
    for (const [m, p] of [
      ['GET', '/people'],
      ['PATCH', `/people/${id}`],
      ['DELETE', `/people/${id}`],
      ['PUT', '/me/person'],
    ]) {
      expect(
        (await api.request(m, p, { token: api.serviceToken, body: m === 'GET' ? undefined : { title: 'x' } })).status,
        `${m} ${p}`,
      ).toBe(403);
    }
    expect((await create(api.serviceToken, { display_name: 'svc' })).status).toBe(403);
  });
});

describe('OpenAPI document', () => {
  it('should document the people, label and voice operations with their schemes', async () => {
    const { body: doc } = await api.request('GET', '/openapi.json');
    expect(doc.paths['/people'].post.security).toEqual([{ bearerAuth: [] }]);
    expect(doc.paths['/people/{id}'].get.security).toEqual([{ bearerAuth: [] }, { serviceAuth: [] }]);
    expect(doc.paths['/people/voice-matches'].post.requestBody.content['application/json'].schema).toBeDefined();
    expect(doc.paths['/meetings/{id}/speaker-labels'].post.parameters.map((p: any) => p.name)).toContain(
      'idempotency-key',
    );
    for (const path of [
      '/me/person',
      '/people/{id}/summaries',
      '/person-summaries/{id}',
      '/tags',
      '/tags/{id}',
      '/meetings/{id}/attendees',
      '/meetings/{id}/attendees/{personId}',
    ]) {
      expect(doc.paths[path], path).toBeDefined();
    }
  });
});
