import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let alice: string;
let bob: string;
let aliceId: string;

const create = (token: string, body: unknown, key: string = randomUUID()) =>
  api.request('POST', '/tags', { token, body, headers: { 'idempotency-key': key } });
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
});
afterAll(() => api?.close());

describe('tags', () => {
  it('should create, get, rename and delete a tag, emitting EntityChanged each time', async () => {
    const res = await create(alice, { name: '  customer ' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      user_id: aliceId,
      name: 'customer',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(await lastEvent(aliceId)).toEqual({
      type: 'EntityChanged',
      entity: 'tag',
      action: 'created',
      id: res.body.id,
      meeting_id: null,
    });
    expect((await api.request('GET', `/tags/${res.body.id}`, { token: alice })).body).toEqual(res.body);

    const renamed = await api.request('PATCH', `/tags/${res.body.id}`, { token: alice, body: { name: 'client' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ id: res.body.id, name: 'client' });
    expect(await lastEvent(aliceId)).toMatchObject({ entity: 'tag', action: 'updated', id: res.body.id });

    expect((await api.request('DELETE', `/tags/${res.body.id}`, { token: alice })).status).toBe(204);
    expect(await lastEvent(aliceId)).toMatchObject({ entity: 'tag', action: 'deleted', id: res.body.id });
    expect((await api.request('GET', `/tags/${res.body.id}`, { token: alice })).status).toBe(404);
    expect((await api.request('DELETE', `/tags/${res.body.id}`, { token: alice })).status).toBe(404);
  });

  it('should list only the caller tags by name, paginated', async () => {
    const carol = await api.token('carol');
    for (const name of ['delta', 'alpha', 'charlie', 'bravo', 'echo']) await create(carol, { name });
    await create(bob, { name: 'aaa-bob' });
    const names: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await api.request('GET', `/tags?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { token: carol });
      expect(res.status).toBe(200);
      names.push(...res.body.items.map((t) => t.name));
      cursor = res.body.next_cursor as string | null;
    } while (cursor);
    expect(names).toEqual(['alpha', 'bravo', 'charlie', 'delta', 'echo']);
    expect((await api.request('GET', '/tags?cursor=%%%', { token: carol })).status).toBe(400);
  });

  it('should validate names', async () => {
    for (const body of [
      {},
      { name: '' },
      { name: '   ' },
      { name: 'x'.repeat(101) },
      { name: 3 },
      { name: 'a', extra: true },
    ]) {
      expect((await create(alice, body)).status, JSON.stringify(body)).toBe(422);
    }
    const { body: tag } = await create(alice, { name: 'ok' });
    expect((await api.request('PATCH', `/tags/${tag.id}`, { token: alice, body: {} })).status).toBe(422);
  });

  it('should answer 409 to a tag name the user already has, but not to another user', async () => {
    expect((await create(alice, { name: 'twin' })).status).toBe(201);
    const dup = await create(alice, { name: ' twin ' });
    expect(dup.status).toBe(409);
    expect(dup.headers.get('content-type')).toContain('application/problem+json');
    expect((await create(bob, { name: 'twin' })).status).toBe(201);
  });

  it('should replay an idempotent create', async () => {
    const key = randomUUID();
    const first = await create(alice, { name: 'once' }, key);
    const again = await create(alice, { name: 'once' }, key);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect((await api.request('POST', '/tags', { token: alice, body: { name: 'nokey' } })).status).toBe(400);
  });

  it('should answer another user with 404 and enforce the bearer scheme', async () => {
    const { body: tag } = await create(alice, { name: 'private' });
    expect((await api.request('GET', `/tags/${tag.id}`, { token: bob })).status).toBe(404);
    expect((await api.request('PATCH', `/tags/${tag.id}`, { token: bob, body: { name: 'mine' } })).status).toBe(404);
    expect((await api.request('DELETE', `/tags/${tag.id}`, { token: bob })).status).toBe(404);
    expect((await api.request('GET', `/tags/${tag.id}`, { token: alice })).body.name).toBe('private');
    expect((await api.request('GET', '/tags')).status).toBe(401);
    expect((await api.request('GET', '/tags', { token: api.serviceToken })).status).toBe(403);
    expect((await create(api.serviceToken, { name: 'svc' })).status).toBe(403);
    expect((await api.request('GET', '/tags/not-a-uuid', { token: alice })).status).toBe(422);
  });
});
