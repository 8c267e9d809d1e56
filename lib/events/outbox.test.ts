// The outbox append against the run's database engine: per-user seqs are consecutive in the order given,
// whoever else appends at the same time, and callers get their events back in their order.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, type Database } from '../db/pool';
import { appendEvents, appendUserEvents, eventsAfter, type EventBody } from './outbox';
import { fileDatabase } from '../../test/harness';
import type { TestDatabase } from '../../test/support/database';

let database: TestDatabase;
let db: Database;
const users: string[] = [];

beforeAll(async () => {
  database = await fileDatabase();
  db = createDatabase(database.url);
  for (const name of ['ada', 'bob', 'cy']) {
    const { rows } = await db.query<{ id: string }>(
      'test.user',
      `INSERT INTO app_user (username, email) VALUES ($1, $1 || '@example.com') RETURNING id`,
      [name],
    );
    users.push(rows[0].id);
  }
});
afterAll(async () => {
  await db?.close();
  await database?.close();
});

// `n` rides along in the stored payload to follow each event's place.
const body = (n: number) =>
  ({ type: 'EntityChanged', entity: 'meeting', action: 'updated', id: null, meeting_id: null, n }) as EventBody;
const nOf = (b: EventBody) => (b as { n?: number }).n;

describe('appendUserEvents', () => {
  it('should give each user consecutive seqs in the order given and return the events in that order', async () => {
    const [ada, bob, cy] = users;
    await db.withTransaction((tx) => appendEvents(tx, bob, [body(0)])); // bob starts at 1, the others at 0
    const input = [ada, bob, ada, cy, bob, ada].map((userId, n) => ({ userId, body: body(n + 1) }));
    const stored = await db.withTransaction((tx) => appendUserEvents(tx, input));

    expect(stored.map((e) => [e.user_id, nOf(e.body)])).toEqual(input.map((e) => [e.userId, nOf(e.body)]));
    expect(stored.map((e) => e.seq)).toEqual([1, 2, 2, 1, 3, 3]);
    expect(new Set(stored.map((e) => e.event_id)).size).toBe(6);
    expect((await eventsAfter(db, ada, 0)).map((e) => nOf(e.body))).toEqual([1, 3, 6]);
  });

  it('should keep every user gapless and unique when many appends run at once', async () => {
    const [ada, bob] = users;
    const before = await Promise.all([ada, bob].map(async (u) => (await eventsAfter(db, u, 0)).length));
    await Promise.all(
      Array.from({ length: 8 }, (_, k) =>
        db.withTransaction((tx) =>
          appendUserEvents(
            tx,
            [bob, ada, bob].map((userId) => ({ userId, body: body(100 + k) })),
          ),
        ),
      ),
    );
    for (const [i, u] of [ada, bob].entries()) {
      const seqs = (await eventsAfter(db, u, 0)).map((e) => e.seq);
      expect(seqs).toEqual(Array.from({ length: before[i] + (i === 0 ? 8 : 16) }, (_, k) => k + 1));
    }
  });

  it('should write nothing for no events', async () => {
    expect(await db.withTransaction((tx) => appendUserEvents(tx, []))).toEqual([]);
  });
});
