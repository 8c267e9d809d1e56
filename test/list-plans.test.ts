// Lists in creation order read one page from an index, however many rows the user has: the plan
// of each list statement the service runs, on 50,000 analysed rows of one user (and other users'
// rows beside them), walks the (owner, created_at, id) index and sorts nothing; following
// next_cursor through a burst of rows created in the same millisecond repeats and skips none.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, type Database, type Queryable } from '@mi/lib/db/pool';
import { listNotes } from '@mi/lib/repositories/notes';
import { listTasks } from '@mi/lib/repositories/tasks';
import { listThreads } from '@mi/lib/repositories/threads';
import { fileDatabase } from './harness';
import type { TestDatabase } from './support/database';

const ROWS = 50_000;
let database: TestDatabase;
let db: Database;
let userId: string;

beforeAll(async () => {
  database = await fileDatabase();
  db = createDatabase(database.url, { max: 2 });
  const users = await db.query<{ id: string }>(
    't.users',
    `INSERT INTO app_user (username, email) SELECT 'u' || n, 'u' || n || '-' || $1 || '@example.test' FROM generate_series(1, 5) n RETURNING id`,
    [randomUUID()],
  );
  userId = users.rows[0].id;
  const ids = users.rows.map((r) => r.id);
  // The user's rows spread over a day, the others' beside them: 5 users × 50,000 rows per table.
  for (const [table, columns, values] of [
    ['task', 'user_id, content, created_at', `u, 'task ' || n, now() - n * interval '1 second'`],
    ['note', 'user_id, content, created_at', `u, 'note ' || n, now() - n * interval '1 second'`],
    ['ai_thread', 'user_id, created_at', `u, now() - n * interval '1 second'`],
  ] as const) {
    await db.query(
      't.rows',
      `INSERT INTO ${table} (${columns}) SELECT ${values} FROM unnest($1::uuid[]) u, generate_series(1, ${ROWS}) n`,
      [ids],
    );
    await db.query('t.analyze', `ANALYZE ${table}`);
  }
}, 300_000);
afterAll(async () => {
  await db?.close();
  await database?.close();
});

/** The plan of every statement `run` sends, as EXPLAIN's text. */
async function plansOf(run: (q: Queryable) => Promise<unknown>): Promise<string[]> {
  const plans: string[] = [];
  const explaining: Queryable = {
    async query(name, text, params) {
      const { rows } = await db.query(name, `EXPLAIN ${text}`, params);
      plans.push(rows.map((r) => r['QUERY PLAN']).join('\n'));
      return db.query(name, text, params);
    },
  };
  await run(explaining);
  return plans;
}

describe.each([
  [
    'tasks',
    'task_user_id_created_at_idx',
    (q: Queryable, cursor?: string) => listTasks(q, userId, { limit: 50, cursor }),
  ],
  [
    'notes',
    'note_user_id_created_at_idx',
    (q: Queryable, cursor?: string) => listNotes(q, userId, { limit: 50, cursor }),
  ],
  [
    'threads',
    'ai_thread_user_id_created_at_idx',
    (q: Queryable, cursor?: string) => listThreads(q, userId, { limit: 50, cursor }),
  ],
] as const)('a page of %s of a user with 50,000', (_, index, list) => {
  it('should walk the (user_id, created_at, id) index without a sort, on the first page and the next', async () => {
    const first = (await list(db)) as { next_cursor: string | null };
    expect(first.next_cursor).not.toBeNull();
    for (const cursor of [undefined, first.next_cursor!]) {
      const [plan] = await plansOf((q) => list(q, cursor));
      expect(plan).toContain(index);
      expect(plan).not.toMatch(/Seq Scan|Bitmap Heap Scan|Sort/);
    }
  });
});

describe('creation-order cursors', () => {
  it('should repeat and skip nothing across rows created in the same millisecond', async () => {
    const owner = (
      await db.query<{ id: string }>(
        't.user',
        `INSERT INTO app_user (username, email) VALUES ('burst', $1) RETURNING id`,
        [`${randomUUID()}@example.test`],
      )
    ).rows[0].id;
    // 120 notes a microsecond apart: a millisecond cursor would skip or repeat some of them.
    await db.query(
      't.burst',
      `INSERT INTO note (user_id, content, created_at) SELECT $1, 'n' || n, timestamptz '2026-11-24 12:00:00.000' + n * interval '1 microsecond' FROM generate_series(1, 120) n`,
      [owner],
    );
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await listNotes(db, owner, { limit: 7, cursor });
      seen.push(...page.items.map((n) => n.content));
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual(Array.from({ length: 120 }, (_, i) => `n${120 - i}`));
  });
});
