// The tenant boundary in the database (issue 38, decisions.md section 8): row policies and the
// runtime roles hold even when the application's own user filter is missing. Native PostgreSQL
// only: PGlite has one superuser session, which no policy binds (docs/architecture.md).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDatabase, type Database, type Queryable } from '@mi/lib/db/pool';
import { getMeeting, listMeetings } from '@mi/lib/repositories/meetings';
import { listNotes } from '@mi/lib/repositories/notes';
import { ensurePartitions } from '@mi/lib/repositories/partitions';
import { search } from '@mi/lib/repositories/search';
import { listTasks } from '@mi/lib/repositories/tasks';
import { fileDatabase, startApi, type ApiHarness } from '../harness';
import { runtimeUrl, type TestDatabase } from '../support/database';

const native = inject('database').kind === 'native';

let api: ApiHarness;
let database: TestDatabase;
let apiDb: Database;
let alice: string; // user A: an account and nothing else
let bob: string; // user B: a row in every table a user's work fills
let bobMeeting: string;
let bobPerson: string;
let tables: string[];

/** A login's own client (the test's, not the service's), closed after use. */
async function asLogin<T>(kind: 'api' | 'live' | 'sweep', fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: runtimeUrl(inject('database'), database.url, kind) });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** The SQLSTATE a statement fails with inside a transaction that is rolled back either way. */
async function refusal(
  c: pg.Client,
  declare: string,
  sql: string,
  params: unknown[] = [],
): Promise<string | undefined> {
  await c.query(`BEGIN; ${declare}`);
  try {
    await c.query(sql, params);
    return undefined;
  } catch (err) {
    return (err as { code?: string }).code;
  } finally {
    await c.query('ROLLBACK');
  }
}

describe.runIf(native)('tenant isolation in the database', () => {
  beforeAll(async () => {
    database = await fileDatabase();
    api = await startApi({}, { database });
    apiDb = createDatabase(runtimeUrl(inject('database'), database.url, 'api'));
    const aliceToken = await api.token('rls-alice');
    const bobToken = await api.token('rls-bob');
    alice = await api.userId(aliceToken);
    bob = await api.userId(bobToken);
    bobMeeting = await api.meeting(bobToken);
    await api.segments(bobToken, bobMeeting, 3);
    bobPerson = (await api.post(bobToken, '/people', { display_name: 'Dana' })).body.id;
    expect((await api.post(bobToken, '/tags', { name: 'q4' })).status).toBe(201);
    const task = (await api.post(bobToken, '/tasks', { content: 'Send the deck budget' })).body.id;
    expect((await api.post(bobToken, `/tasks/${task}/sub-tasks`, { content: 'Draft' })).status).toBe(201);
    expect((await api.post(bobToken, '/notes', { content: 'Remember the budget' })).status).toBe(201);
    const thread = (await api.post(bobToken, '/threads', {})).body.id;
    expect((await api.post(bobToken, `/threads/${thread}/messages`, { role: 'user', content: 'Hi' })).status).toBe(201);
    const { rows } = await api.rt.db.query<{ name: string }>(
      'test.tables',
      `SELECT relname AS name FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p') AND NOT relispartition ORDER BY 1`,
    );
    tables = rows.map((r) => r.name);
  }, 120_000);

  afterAll(async () => {
    await apiDb?.close();
    await api?.close();
    await database?.close();
  });

  it('has row level security enabled, forced and a policy on every table', async () => {
    const { rows } = await api.rt.db.query<{ name: string }>(
      'test.unguarded',
      `SELECT c.relname AS name FROM pg_class c
       WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
         AND NOT c.relispartition
         AND NOT (c.relrowsecurity AND c.relforcerowsecurity AND EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid))`,
    );
    expect(rows.map((r) => r.name)).toEqual([]);
    expect(tables.length).toBeGreaterThan(30);
  });

  it('lets only the sweep reach a partition directly (partitions answer to the parent policy only through it)', async () => {
    // Days and months ahead, made by the sweep's login through the owner-rights function, then dropped by it.
    const later = new Date(Date.now() + 80 * 86_400_000);
    const made = await ensurePartitions(api.sweeper.db, 'event_outbox', later);
    expect(made.length).toBeGreaterThan(0);
    const months = await ensurePartitions(api.sweeper.db, 'segment_manifest', later);
    expect(months.length).toBeGreaterThan(0);
    const { rows } = await api.rt.db.query<{ name: string; api: boolean; live: boolean; sweep: boolean }>(
      'test.partitions',
      `SELECT c.relname AS name, has_table_privilege('mi_api', c.oid, 'SELECT') AS api,
              has_table_privilege('mi_live', c.oid, 'SELECT') AS live,
              has_table_privilege('mi_sweep', c.oid, 'DELETE') AS sweep
         FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relispartition AND c.relkind = 'r'`,
    );
    expect(rows.map((r) => r.name)).toEqual(expect.arrayContaining([...made, ...months, 'segment_manifest_default']));
    expect(rows.filter((r) => r.api || r.live || !r.sweep)).toEqual([]);
    await api.sweeper.db.withTransaction(async (tx) => {
      await tx.query('test.drop', 'SELECT drop_partition($1, $2)', ['event_outbox', made[0]]);
      await tx.query('test.drop', 'SELECT drop_partition($1, $2)', ['segment_manifest', months[0]]);
    });
    for (const [table, part] of [
      ['event_outbox', made[1]],
      ['segment_manifest', 'segment_manifest_default'],
    ])
      await expect(apiDb.query('test.api_drop', 'SELECT drop_partition($1, $2)', [table, part])).rejects.toThrow(
        /permission denied/,
      );
  });

  it('shows user A none of user B rows in any table, with no filter at all, and changes none of them', async () => {
    // B's rows are there (the service sees them), so an empty answer to A is the policies' doing.
    const bobsTables = await asLogin('api', async (c) => {
      await c.query(`BEGIN; SELECT set_config('app.service', 'api', true)`);
      const seen: string[] = [];
      for (const t of tables) if ((await c.query(`SELECT 1 FROM "${t}" LIMIT 1`)).rowCount) seen.push(t);
      await c.query('ROLLBACK');
      return seen;
    });
    expect(bobsTables).toEqual(
      expect.arrayContaining(['meeting', 'transcription', 'transcript_segment', 'person', 'tag', 'task', 'sub_task']),
    );
    expect(bobsTables).toEqual(expect.arrayContaining(['note', 'ai_thread', 'chat_message', 'event_outbox']));
    await asLogin('api', async (c) => {
      await c.query('BEGIN');
      await c.query(`SELECT set_config('app.user_id', $1, true)`, [alice]);
      for (const t of tables) {
        const { rows } = await c.query(`SELECT * FROM "${t}"`);
        // A's own account row (app_user) and A's own event counter are A's; nothing else exists for A.
        const foreign = rows.filter((r) => (r.user_id ?? r.id) === bob || JSON.stringify(r).includes(bob));
        expect({ table: t, foreign }).toEqual({ table: t, foreign: [] });
        if (!['app_user', 'event_sequence', 'event_outbox', 'idempotency_record'].includes(t))
          expect({ table: t, rows: rows.length }).toEqual({ table: t, rows: 0 });
        // Every row A can change is one A sees (A's own); none of B's.
        const col = (await c.query(`SELECT * FROM "${t}" LIMIT 0`)).fields[0].name;
        const updated = (await c.query(`UPDATE "${t}" SET "${col}" = "${col}"`)).rowCount;
        expect({ table: t, updated }).toEqual({ table: t, updated: rows.length });
      }
      const deleted = (await c.query('DELETE FROM meeting')).rowCount;
      expect(deleted).toBe(0);
      // Writing a row under B's meeting: refused by the policy's check.
      const insert = await c
        .query('INSERT INTO meeting_attendee (meeting_id, person_id) VALUES ($1, $2)', [bobMeeting, bobPerson])
        .then(
          () => 'inserted',
          (e: { code?: string }) => e.code,
        );
      expect(insert).toBe('42501');
      await c.query('ROLLBACK');
    });
    expect((await api.rt.db.query('test.count', 'SELECT 1 FROM meeting WHERE id = $1', [bobMeeting])).rowCount).toBe(1);
  });

  it('gives nothing to a transaction that declared nobody', async () => {
    const counts = await asLogin('api', async (c) => {
      const out: Record<string, number> = {};
      for (const t of ['app_user', 'meeting', 'transcript_segment', 'task', 'event_outbox'])
        out[t] = (await c.query(`SELECT 1 FROM "${t}"`)).rowCount ?? -1;
      return out;
    });
    expect(counts).toEqual({ app_user: 0, meeting: 0, transcript_segment: 0, task: 0, event_outbox: 0 });
  });

  it("ends a read's declaration with its statement: the connection's next statement declares nobody", async () => {
    const one = createDatabase(runtimeUrl(inject('database'), database.url, 'api'), { max: 1 });
    try {
      const count = 'SELECT count(*)::int AS n FROM meeting';
      const seen = async (db: Queryable) => (await db.query<{ n: number }>('test.count', count)).rows[0]!.n;
      // The declared read's own row only: the declaration's result is not the caller's.
      expect((await one.as({ userId: bob }).query('test.rows', 'SELECT id FROM meeting')).rows).toEqual([
        { id: bobMeeting },
      ]);
      expect(await seen(one.as({ service: 'sweep' }))).toBeGreaterThan(0);
      expect(await seen(one)).toBe(0); // the same connection: the service's declaration ended
      expect(await seen(one.as({ userId: alice }))).toBe(0);
      expect(await seen(one.as({ userId: bob }))).toBe(1);
      expect(await seen(one)).toBe(0);
    } finally {
      await one.close();
    }
  });

  it("returns none of B's rows from repository reads whose user filter is cut out", async () => {
    let cuts = 0;
    // The mutation: every `user_id = $n` predicate of the SQL becomes true (`$n::uuid IS NOT NULL`).
    const unfiltered = (db: Queryable): Queryable => ({
      query: (name, text, params) =>
        db.query(
          name,
          text.replace(/\b(?:\w+\.)?user_id = (\$\d+)/g, (_, p: string) => (cuts++, `${p}::uuid IS NOT NULL`)),
          params,
        ),
    });
    const asAlice = unfiltered(apiDb.as({ userId: alice }));
    const page = { limit: 50 };
    expect((await listMeetings(asAlice, alice, page)).items).toEqual([]);
    expect(await getMeeting(asAlice, { userId: alice }, bobMeeting)).toBeNull();
    expect((await listTasks(asAlice, alice, page)).items).toEqual([]);
    expect((await listNotes(asAlice, alice, page)).items).toEqual([]);
    expect((await search(asAlice, alice, { q: 'budget', limit: 50 })).items).toEqual([]);
    expect(cuts).toBeGreaterThan(4);
    // The same cut reads as the service do reach B's rows: only the policies stood in the way.
    const asService = unfiltered(apiDb.as({ service: 'api' }));
    expect((await listMeetings(asService, alice, page)).items.map((m) => m.id)).toContain(bobMeeting);
    expect((await listTasks(asService, alice, page)).items.length).toBeGreaterThan(0);
  });

  it('keeps each runtime role to its grants: no superuser, no BYPASSRLS, owns nothing', async () => {
    const { rows } = await api.rt.db.query<{ rolname: string; rolsuper: boolean; rolbypassrls: boolean; owns: number }>(
      'test.roles',
      `SELECT r.rolname, r.rolsuper, r.rolbypassrls,
              (SELECT count(*)::int FROM pg_class c WHERE c.relowner = r.oid AND c.relnamespace = 'public'::regnamespace) AS owns
       FROM pg_roles r WHERE r.rolname IN ('mi_api', 'mi_live', 'mi_sweep', 'mi_api_login', 'mi_live_login', 'mi_sweep_login')
       ORDER BY 1`,
    );
    expect(rows).toHaveLength(6);
    for (const r of rows) expect(r).toEqual({ rolname: r.rolname, rolsuper: false, rolbypassrls: false, owns: 0 });
    const service = (kind: string) => `SELECT set_config('app.service', '${kind}', true)`;
    await asLogin('api', async (c) => {
      const declare = service('api');
      expect(await refusal(c, declare, 'DROP TABLE meeting')).toBe('42501');
      expect(await refusal(c, declare, 'TRUNCATE meeting')).toBe('42501');
      expect(await refusal(c, declare, 'ALTER TABLE meeting ADD COLUMN x int')).toBe('42501');
      expect(await refusal(c, declare, 'ALTER TABLE meeting DISABLE ROW LEVEL SECURITY')).toBe('42501');
      expect(await refusal(c, declare, 'CREATE TABLE public.x (id int)')).toBe('42501');
      expect(await refusal(c, declare, 'SELECT 1 FROM meeting')).toBeUndefined();
    });
    await asLogin('sweep', async (c) => {
      const declare = service('sweep');
      const meeting = `INSERT INTO meeting (user_id, title, source_type) VALUES ($1, 'x', 'text')`;
      expect(await refusal(c, declare, meeting, [bob])).toBe('42501');
      expect(await refusal(c, declare, `INSERT INTO task (user_id, content) VALUES ($1, 'x')`, [bob])).toBe('42501');
      expect(await refusal(c, declare, 'TRUNCATE event_outbox')).toBe('42501');
      expect(await refusal(c, declare, 'DROP TABLE meeting')).toBe('42501');
      expect(await refusal(c, declare, 'DELETE FROM event_outbox WHERE false')).toBeUndefined();
    });
    await asLogin('live', async (c) => {
      const declare = service('live');
      const meeting = `INSERT INTO meeting (user_id, title, source_type) VALUES ($1, 'x', 'text')`;
      expect(await refusal(c, declare, meeting, [bob])).toBe('42501');
      expect(await refusal(c, declare, 'DELETE FROM meeting WHERE false')).toBe('42501');
      expect(await refusal(c, declare, 'TRUNCATE segment_manifest')).toBe('42501');
      expect(await refusal(c, declare, 'UPDATE recording SET updated_at = updated_at WHERE false')).toBeUndefined();
    });
  });
});
