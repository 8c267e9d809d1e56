import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let alice: string;
let bob: string;
let aliceId: string;
let person: string;

const create = (token: string, personId: string, body: unknown, key: string = randomUUID()) =>
  api.request('POST', `/people/${personId}/summaries`, { token, body, headers: { 'idempotency-key': key } });
const newPerson = async (token: string) =>
  (
    await api.request('POST', '/people', {
      token,
      body: { display_name: `p-${randomUUID()}` },
      headers: { 'idempotency-key': randomUUID() },
    })
  ).body.id;
const lastEvent = async (userId: string) =>
  (
    await api.rt.db.query(
      'test.events',
      'SELECT payload FROM event_outbox WHERE user_id = $1 ORDER BY seq DESC LIMIT 1',
      [userId],
    )
  ).rows[0]?.payload;

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('alice');
  bob = await api.token('bob');
  aliceId = (await api.request('GET', '/me', { token: alice })).body.id;
  person = await newPerson(alice);
});
afterAll(() => api?.close());

describe('person summaries', () => {
  it('should create a summary authored by the caller, then patch and delete it', async () => {
    const res = await create(alice, person, { summary: 'Prefers async updates', context: { meeting: 'kickoff' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      person_id: person,
      author_id: aliceId,
      summary: 'Prefers async updates',
      context: { meeting: 'kickoff' },
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(await lastEvent(aliceId)).toEqual({
      type: 'EntityChanged',
      entity: 'person_summary',
      action: 'created',
      id: res.body.id,
      meeting_id: null,
    });

    const patched = await api.request('PATCH', `/person-summaries/${res.body.id}`, {
      token: alice,
      body: { context: null },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ id: res.body.id, summary: 'Prefers async updates', context: null });
    expect(patched.body).not.toHaveProperty('owner_id');
    const patched2 = await api.request('PATCH', `/person-summaries/${res.body.id}`, {
      token: alice,
      body: { summary: 'Now prefers calls' },
    });
    expect(patched2.body).toMatchObject({ summary: 'Now prefers calls', context: null });
    expect(await lastEvent(aliceId)).toMatchObject({ entity: 'person_summary', action: 'updated', id: res.body.id });

    expect((await api.request('DELETE', `/person-summaries/${res.body.id}`, { token: alice })).status).toBe(204);
    expect(await lastEvent(aliceId)).toMatchObject({ entity: 'person_summary', action: 'deleted', id: res.body.id });
    expect((await api.request('DELETE', `/person-summaries/${res.body.id}`, { token: alice })).status).toBe(404);
  });

  it('should list a person summaries newest first with a cursor', async () => {
    const p = await newPerson(alice);
    for (let i = 0; i < 5; i++) await create(alice, p, { summary: `s${i}` });
    await create(alice, person, { summary: 'other person' });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await api.request('GET', `/people/${p}/summaries?limit=2${cursor ? `&cursor=${cursor}` : ''}`, {
        token: alice,
      });
      expect(res.status).toBe(200);
      seen.push(...res.body.items.map((s) => s.summary));
      cursor = res.body.next_cursor as string | null;
    } while (cursor);
    expect(seen).toEqual(['s4', 's3', 's2', 's1', 's0']);
    expect((await api.request('GET', `/people/${p}/summaries?cursor=bad`, { token: alice })).status).toBe(400);
  });

  it('should answer 404 for another user or unknown person, and for their summaries', async () => {
    const { body: mine } = await create(alice, person, { summary: 'private' });
    const bobsPerson = await newPerson(bob);
    expect((await create(alice, bobsPerson, { summary: 'x' })).status).toBe(404);
    expect((await create(alice, randomUUID(), { summary: 'x' })).status).toBe(404);
    expect((await api.request('GET', `/people/${person}/summaries`, { token: bob })).status).toBe(404);
    expect(
      (await api.request('PATCH', `/person-summaries/${mine.id}`, { token: bob, body: { summary: 'hacked' } })).status,
    ).toBe(404);
    expect((await api.request('DELETE', `/person-summaries/${mine.id}`, { token: bob })).status).toBe(404);
    const list = await api.request('GET', `/people/${person}/summaries`, { token: alice });
    expect(list.body.items.find((s) => s.id === mine.id)!.summary).toBe('private');
  });

  it('should delete summaries with their person', async () => {
    const p = await newPerson(alice);
    const { body: s } = await create(alice, p, { summary: 'gone soon' });
    await api.request('DELETE', `/people/${p}`, { token: alice });
    expect(
      (await api.request('PATCH', `/person-summaries/${s.id}`, { token: alice, body: { summary: 'x' } })).status,
    ).toBe(404);
  });

  it('should validate bodies, keys and schemes', async () => {
    for (const body of [
      {},
      { summary: '' },
      { summary: 5 },
      { summary: 'x'.repeat(20_001) },
      { summary: 'ok', author_id: aliceId },
    ]) {
      expect((await create(alice, person, body)).status, JSON.stringify(body).slice(0, 50)).toBe(422);
    }
    expect(
      (await api.request('POST', `/people/${person}/summaries`, { token: alice, body: { summary: 'k' } })).status,
    ).toBe(400);
    const key = randomUUID();
    const first = await create(alice, person, { summary: 'once' }, key);
    const again = await create(alice, person, { summary: 'once' }, key);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect((await api.request('PATCH', `/person-summaries/${first.body.id}`, { token: alice, body: {} })).status).toBe(
      422,
    );
    expect((await api.request('GET', `/people/${person}/summaries`)).status).toBe(401);
    expect((await create(api.serviceToken, person, { summary: 'svc' })).status).toBe(403);
    expect(
      (await api.request('DELETE', `/person-summaries/${first.body.id}`, { token: api.serviceToken })).status,
    ).toBe(403);
  });
});
