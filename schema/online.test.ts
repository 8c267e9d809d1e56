// db:apply while the service writes, on native PostgreSQL with real lock conflicts: the plan's
// transaction gives way instead of queueing writers behind it, index builds on large tables do not
// block writers, a deadlock with the service is retried, and an index a cut-short build left
// invalid is rebuilt.
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fileDatabase } from '../test/harness';
import type { TestDatabase } from '../test/support/database';
import { until } from '../test/support/poll';
import { applySchema } from './apply';
import { brokenInvariants } from './invariants';

let database: TestDatabase;
const clients: pg.Client[] = [];
async function connect(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: database.url });
  await c.connect();
  clients.push(c);
  return c;
}
let db: pg.Client;
let user: string;
beforeEach(async () => {
  database = await fileDatabase();
  db = await connect();
  user = (
    await db.query(`INSERT INTO app_user (username, email)
      VALUES ('a', 'a@example.test') RETURNING id`)
  ).rows[0].id;
});
afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((c) => c.end()));
  await database.close();
});

// An apply on a loaded machine takes its time: a longer bound than the polling helper's default.
const APPLY = { timeoutMs: 60_000 };

const waitingQuery = async (pattern: string) =>
  (
    await db.query(
      `SELECT 1 FROM pg_stat_activity
      WHERE query ILIKE $1 AND state = 'active' AND pid <> pg_backend_pid()`,
      [pattern],
    )
  ).rowCount! > 0;

/**
 * db:apply while a writer holds a transaction open (rows 100, then 101 from another connection
 * meanwhile): the conversion's brief exclusive steps give way to it (and so to the writers that
 * would queue behind them) and are retried.
 */
async function applyBesideWriter(insert: (c: pg.Client, seq: number) => Promise<unknown>) {
  const open = await connect();
  await open.query('BEGIN');
  await insert(open, 100);
  const log: string[] = [];
  const applying = applySchema(database.url, { onlineRows: 5, lockTimeoutMs: 200, log: (l) => log.push(l) });
  await until('the conversion to give way to the open writer', () => log.some((l) => /waited too long/.test(l)));
  await insert(await connect(), 101);
  await open.query('COMMIT');
  return applying;
}
describe('db:apply online', { timeout: 120_000 }, () => {
  it('should give way to a long reader instead of queueing the writers behind its lock, then apply', async () => {
    await db.query('ALTER TABLE note DROP COLUMN tags'); // the plan re-adds it: ACCESS EXCLUSIVE on note
    const reader = await connect();
    await reader.query('BEGIN');
    await reader.query('SELECT count(*) FROM note'); // holds ACCESS SHARE until it ends

    const lines: string[] = [];
    let done = false;
    const applying = applySchema(database.url, {
      lockTimeoutMs: 300,
      lockRetries: 1000,
      log: (l) => lines.push(l),
    }).finally(() => {
      done = true;
    });
    await until(
      'the transaction to give way',
      () => lines.some((l) => l.includes('waited too long for a lock')),
      APPLY,
    );
    // A writer of note is not stuck behind the apply's waiting lock while the reader goes on.
    const writer = await connect();
    await writer.query(`INSERT INTO note (user_id, content) VALUES ($1, 'written during the upgrade')`, [user]);
    expect(done).toBe(false);

    await reader.query('COMMIT');
    const result = await applying;
    expect(result.statements).toEqual([expect.stringMatching(/add column "tags" jsonb/)]);
    const { rows } = await db.query(`SELECT content, tags FROM note`);
    expect(rows).toEqual([{ content: 'written during the upgrade', tags: null }]);
  });

  it('should retry its transaction when the server aborts it in a deadlock with a service transaction', async () => {
    await db.query('ALTER TABLE meeting DROP COLUMN headline; ALTER TABLE note DROP COLUMN tags');
    // The apply's sessions look for deadlocks after 5 s, the service's after 60 s: the cycle the
    // service closes below is found by the apply's session, which the server then aborts.
    await db.query(`DO $$ BEGIN
      EXECUTE format('ALTER DATABASE %I SET deadlock_timeout = %L', current_database(), '5s'); END $$`);
    const service = await connect();
    await service.query(`SET deadlock_timeout = '60s'`);
    await service.query('BEGIN');
    await service.query(`INSERT INTO note (user_id, content) VALUES ($1, 'written by the service')`, [user]);

    const lines: string[] = [];
    const applying = applySchema(database.url, { lockTimeoutMs: 30_000, log: (l) => lines.push(l) });
    // The plan locks meeting, then note: it holds meeting while it waits for the service's note.
    await until('the apply to wait for note', () => waitingQuery('LOCK TABLE "meeting", "note" %'), APPLY);
    const reading = service.query('SELECT count(*) FROM meeting');
    await until(
      'the apply to give way',
      () => lines.some((l) => l.startsWith('-- deadlocked with another session')),
      APPLY,
    );
    await reading;
    await service.query('COMMIT');

    const result = await applying;
    expect(result.statements).toEqual([
      expect.stringMatching(/"meeting" add column "headline" text/),
      expect.stringMatching(/"note" add column "tags" jsonb/),
    ]);
    expect((await db.query('SELECT content FROM note')).rows).toEqual([{ content: 'written by the service' }]);
    expect(await brokenInvariants(db)).toEqual({});
  });

  it('should build an index on a large table CONCURRENTLY, outside the transaction, without blocking writers', async () => {
    await db.query('DROP INDEX task_meeting_id_idx');
    await db.query(`INSERT INTO task (user_id, content) SELECT $1, 'task ' || i FROM generate_series(1, 5) i`, [user]);
    // An open writer: a plain CREATE INDEX waits for it, and every later writer waits behind that.
    const open = await connect();
    await open.query('BEGIN');
    await open.query(`INSERT INTO task (user_id, content) VALUES ($1, 'open')`, [user]);

    const applying = applySchema(database.url, { onlineRows: 5, lockTimeoutMs: 60_000 });
    await until(
      'the index build to wait for the open writer',
      () => waitingQuery('%create index%task_meeting_id_idx%'),
      APPLY,
    );
    const writer = await connect();
    await writer.query(`INSERT INTO task (user_id, content) VALUES ($1, 'during the build')`, [user]);

    await open.query('COMMIT');
    const result = await applying;
    expect(result.statements).toEqual([
      expect.stringMatching(/^CREATE INDEX CONCURRENTLY task_meeting_id_idx ON public\.task/),
    ]);
    expect(await brokenInvariants(db)).toEqual({});
    expect((await db.query(`SELECT count(*)::int AS n FROM task`)).rows[0].n).toBe(7);
  });

  it('should convert a populated plain outbox to day partitions without blocking its writers, as its dry run says', async () => {
    // The outbox as released (schema/releases): a plain table.
    await db.query('DROP TABLE event_outbox');
    await db.query(`CREATE TABLE event_outbox (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      user_id uuid NOT NULL REFERENCES app_user (id) ON DELETE CASCADE,
      seq bigint NOT NULL, event_type text NOT NULL, payload jsonb NOT NULL, origin_client_id uuid,
      trace_context jsonb, created_at timestamptz NOT NULL DEFAULT clock_timestamp(), published_at timestamptz,
      CONSTRAINT event_outbox_user_id_seq_key UNIQUE (user_id, seq));
      CREATE INDEX event_outbox_unpublished_idx ON event_outbox (created_at) WHERE published_at IS NULL;
      CREATE INDEX event_outbox_created_at_idx ON event_outbox (created_at);`);
    const insert = (c: pg.Client, seq: number) =>
      c.query(`INSERT INTO event_outbox (user_id, seq, event_type, payload) VALUES ($1, $2, 'x', '{}')`, [user, seq]);
    await db.query(
      `INSERT INTO event_outbox (user_id, seq, event_type, payload, created_at)
       SELECT $1, g, 'x', '{}', now() - g * interval '1 hour' FROM generate_series(1, 10) g`,
      [user],
    );
    const kind = async () =>
      (await db.query(`SELECT relkind FROM pg_class WHERE relname = 'event_outbox'`)).rows[0].relkind;

    const dry = await applySchema(database.url, { dryRun: true, onlineRows: 5 });
    expect(dry.statements.filter((s) => /^drop table/i.test(s))).toEqual([]);
    expect(dry.statements).toContainEqual(expect.stringMatching(/ATTACH PARTITION "event_outbox_before_\d{8}"/));
    expect(await kind()).toBe('r');

    // The keys are built CONCURRENTLY beside the open writer.
    const result = await applyBesideWriter(insert);
    expect(result.statements).toEqual(dry.statements);
    expect(result.statements).toContainEqual(expect.stringMatching(/^CREATE UNIQUE INDEX CONCURRENTLY/));

    expect(await kind()).toBe('p');
    expect((await db.query('SELECT count(*)::int AS n FROM event_outbox')).rows[0].n).toBe(12);
    await insert(db, 102); // after the swap: into today's partition
    const { rows } = await db.query(
      `SELECT tableoid::regclass::text AS part, seq::int FROM event_outbox WHERE seq >= 100 ORDER BY seq`,
    );
    expect(rows.map((r) => r.part)).toEqual([
      expect.stringMatching(/^event_outbox_before_/),
      expect.stringMatching(/^event_outbox_before_/),
      expect.stringMatching(/^event_outbox_before_/), // its range runs to the second midnight ahead
    ]);
    expect(await brokenInvariants(db)).toEqual({});
    expect(await applySchema(database.url)).toEqual({ statements: [], applied: false, dataSteps: {}, deferred: [] });
  });

  it('should convert a populated plain manifest to month partitions without blocking its writers', async () => {
    // The manifest as released (schema/releases): a plain table.
    await db.query('DROP TABLE segment_manifest');
    await db.query(`CREATE TABLE segment_manifest (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      meeting_id uuid NOT NULL REFERENCES meeting (id) ON DELETE CASCADE,
      audio_version integer NOT NULL DEFAULT 1, start_sequence bigint NOT NULL, end_sequence bigint NOT NULL,
      started_at_ms bigint NOT NULL, duration_ms bigint NOT NULL, object_name text NOT NULL, object_generation bigint,
      byte_count bigint NOT NULL, crc32c text NOT NULL, sha256 text, created_at timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT segment_manifest_range_key UNIQUE (meeting_id, audio_version, start_sequence, end_sequence))`);
    const meeting = (
      await db.query(
        `INSERT INTO meeting (user_id, title, source_type, start_time) VALUES ($1, 'm', 'recording', now()) RETURNING id`,
        [user],
      )
    ).rows[0].id;
    const rows = `INSERT INTO segment_manifest (meeting_id, start_sequence, end_sequence, started_at_ms, duration_ms,
      object_name, byte_count, crc32c) SELECT $1, g, g, g * 100, 100, 'o' || g, 1, 'c' FROM generate_series($2::int, $3::int) g`;
    const insert = (c: pg.Client, seq: number) => c.query(rows, [meeting, seq, seq]);
    await db.query(rows, [meeting, 1, 10]);

    const result = await applyBesideWriter(insert);
    expect(result.statements).toContainEqual(expect.stringMatching(/ATTACH PARTITION "segment_manifest_before_\d{8}"/));

    const kind = await db.query(`SELECT relkind FROM pg_class WHERE relname = 'segment_manifest'`);
    expect(kind.rows[0].relkind).toBe('p');
    await insert(db, 102); // after the swap: into the old table, whose range runs to a month boundary ahead
    const parts = await db.query('SELECT DISTINCT tableoid::regclass::text AS part FROM segment_manifest');
    expect(parts.rows).toEqual([{ part: expect.stringMatching(/^segment_manifest_before_\d{8}$/) }]);
    expect((await db.query('SELECT count(*)::int AS n FROM segment_manifest')).rows[0].n).toBe(13);
    expect(await brokenInvariants(db)).toEqual({});
    expect(await applySchema(database.url)).toEqual({ statements: [], applied: false, dataSteps: {}, deferred: [] });
  });

  it('should keep an index build in the transaction on a small table', async () => {
    await db.query('DROP INDEX task_meeting_id_idx');
    const result = await applySchema(database.url, { onlineRows: 5 });
    expect(result.statements).toEqual([expect.stringMatching(/^CREATE INDEX task_meeting_id_idx ON public\.task/)]);
  });

  it('should rebuild an index that a cut-short CONCURRENTLY build left invalid', async () => {
    await db.query('DROP INDEX app_user_email_key');
    await db.query(`INSERT INTO app_user (username, email) VALUES ('b', 'A@example.test')`);
    // Fails on the duplicate and leaves an invalid index with today's definition behind.
    await expect(
      db.query('CREATE UNIQUE INDEX CONCURRENTLY app_user_email_key ON app_user (lower(email))'),
    ).rejects.toMatchObject({ code: '23505' });
    await db.query(`UPDATE app_user SET email = 'b@example.test' WHERE username = 'b'`);
    expect(Object.keys(await brokenInvariants(db))).toEqual(['indexes valid']);

    const lines: string[] = [];
    const result = await applySchema(database.url, { log: (l) => lines.push(l) });
    expect(lines).toContain('-- dropping invalid index app_user_email_key (a build cut short); the plan rebuilds it');
    expect(result.statements).toEqual([expect.stringMatching(/CREATE UNIQUE INDEX app_user_email_key/)]);
    expect(await brokenInvariants(db)).toEqual({});
    await expect(
      db.query(`INSERT INTO app_user (username, email)
        VALUES ('c', 'B@EXAMPLE.TEST')`),
    ).rejects.toMatchObject({ code: '23505' });
  });
});
