import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let alice: string;
let bob: string;
let aliceId: string;

const newPerson = async (token: string, display_name = `p-${randomUUID()}`) =>
  (
    await api.request('POST', '/people', {
      token,
      body: { display_name },
      headers: { 'idempotency-key': randomUUID() },
    })
  ).body.id;
const newMeeting = async (token: string) =>
  (
    await api.request('POST', '/meetings', {
      token,
      body: { title: 'm', source_type: 'text' },
      headers: { 'idempotency-key': randomUUID() },
    })
  ).body.id;
const events = async (userId: string, n: number) =>
  (
    await api.rt.db.query(
      'test.events',
      'SELECT payload FROM event_outbox WHERE user_id = $1 ORDER BY seq DESC LIMIT $2',
      [userId, n],
    )
  ).rows
    .map((r) => r.payload)
    .reverse();

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('alice');
  bob = await api.token('bob');
  aliceId = (await api.request('GET', '/me', { token: alice })).body.id;
});
afterAll(() => api?.close());

describe('meeting attendees', () => {
  it('should add attendees idempotently, list them by name and remove them', async () => {
    const m = await newMeeting(alice);
    const [zoe, abe] = [await newPerson(alice, 'Zoe'), await newPerson(alice, 'Abe')];
    for (const p of [zoe, abe, zoe])
      expect((await api.request('PUT', `/meetings/${m}/attendees/${p}`, { token: alice })).status).toBe(204);
    // The repeated PUT changed nothing and emitted nothing.
    expect(await events(aliceId, 2)).toEqual([
      { type: 'EntityChanged', entity: 'meeting_attendee', action: 'created', id: zoe, meeting_id: m },
      { type: 'EntityChanged', entity: 'meeting_attendee', action: 'created', id: abe, meeting_id: m },
    ]);
    const list = await api.request('GET', `/meetings/${m}/attendees`, { token: alice });
    expect(list.status).toBe(200);
    expect(list.body.items.map((p) => p.display_name)).toEqual(['Abe', 'Zoe']);
    expect(list.body.next_cursor).toBeNull();
    const page1 = await api.request('GET', `/meetings/${m}/attendees?limit=1`, { token: alice });
    const page2 = await api.request('GET', `/meetings/${m}/attendees?limit=1&cursor=${page1.body.next_cursor}`, {
      token: alice,
    });
    expect([...page1.body.items, ...page2.body.items].map((p) => p.id)).toEqual([abe, zoe]);

    expect((await api.request('DELETE', `/meetings/${m}/attendees/${zoe}`, { token: alice })).status).toBe(204);
    expect((await events(aliceId, 1))[0]).toEqual({
      type: 'EntityChanged',
      entity: 'meeting_attendee',
      action: 'deleted',
      id: zoe,
      meeting_id: m,
    });
    expect((await api.request('DELETE', `/meetings/${m}/attendees/${zoe}`, { token: alice })).status).toBe(204);
    expect(
      (await api.request('GET', `/meetings/${m}/attendees`, { token: alice })).body.items.map((p) => p.id),
    ).toEqual([abe]);
  });

  it("should answer 422 for another user's or an unknown person", async () => {
    const m = await newMeeting(alice);
    const bobs = await newPerson(bob);
    for (const p of [bobs, randomUUID()]) {
      const put = await api.request('PUT', `/meetings/${m}/attendees/${p}`, { token: alice });
      expect(put.status).toBe(422);
      expect(put.body.errors).toEqual([{ path: 'personId', message: expect.any(String) }]);
      expect((await api.request('DELETE', `/meetings/${m}/attendees/${p}`, { token: alice })).status).toBe(422);
    }
    expect((await api.request('GET', `/meetings/${m}/attendees`, { token: alice })).body.items).toEqual([]);
  });

  it('should answer 404 for an unknown, deleted or other user meeting', async () => {
    const p = await newPerson(alice);
    const bobsMeeting = await newMeeting(bob);
    const gone = await newMeeting(alice);
    await api.request('DELETE', `/meetings/${gone}`, { token: alice });
    for (const m of [randomUUID(), gone, bobsMeeting]) {
      expect((await api.request('GET', `/meetings/${m}/attendees`, { token: alice })).status).toBe(404);
      expect((await api.request('PUT', `/meetings/${m}/attendees/${p}`, { token: alice })).status).toBe(404);
      expect((await api.request('DELETE', `/meetings/${m}/attendees/${p}`, { token: alice })).status).toBe(404);
    }
  });

  it('should drop attendances with the person', async () => {
    const m = await newMeeting(alice);
    const p = await newPerson(alice);
    await api.request('PUT', `/meetings/${m}/attendees/${p}`, { token: alice });
    await api.request('DELETE', `/people/${p}`, { token: alice });
    expect((await api.request('GET', `/meetings/${m}/attendees`, { token: alice })).body.items).toEqual([]);
  });

  it('should validate ids and enforce the bearer scheme', async () => {
    const m = await newMeeting(alice);
    const p = await newPerson(alice);
    expect((await api.request('PUT', `/meetings/${m}/attendees/not-a-uuid`, { token: alice })).status).toBe(422);
    expect((await api.request('GET', `/meetings/${m}/attendees?limit=500`, { token: alice })).status).toBe(422);
    expect((await api.request('PUT', `/meetings/${m}/attendees/${p}`)).status).toBe(401);
    expect((await api.request('PUT', `/meetings/${m}/attendees/${p}`, { token: api.serviceToken })).status).toBe(403);
    expect((await api.request('GET', `/meetings/${m}/attendees`, { token: api.serviceToken })).status).toBe(403);
  });
});
