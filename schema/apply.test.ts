// db:apply against real databases of the run's engine: fresh, older shapes, destructive diffs.
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fileDatabase } from '../test/harness';
import type { TestDatabase } from '../test/support/database';
import { applySchema, DestructiveChangeError, PreflightError } from './apply';

let database: TestDatabase;
let client: pg.Client;
beforeEach(async () => {
  database = await fileDatabase({ schema: false });
  client = new pg.Client({ connectionString: database.url });
  await client.connect();
});
afterEach(async () => {
  await client.end();
  await database.close();
});
// The database under test, as the tests below name it.
const target = {
  get url() {
    return database.url;
  },
  db: {
    query: <R extends pg.QueryResultRow = any>(sql: string, params?: unknown[]) => client.query<R>(sql, params),
    exec: (sql: string) => client.query(sql),
  },
};

const columns = async (table: string) =>
  (
    await target.db.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1`,
      [table],
    )
  ).rows.map((r) => r.column_name);
const indexExists = async (name: string) =>
  (await target.db.query(`SELECT 1 FROM pg_indexes WHERE schemaname = 'public' AND indexname = $1`, [name])).rows
    .length === 1;

// Each diff boots a scratch PGlite: seconds each on a busy machine.
describe('applySchema', { timeout: 120_000 }, () => {
  it("should create an empty database's schema with schema.sql itself, and change nothing the second time", async () => {
    const log: string[] = [];
    const first = await applySchema(target.url, { log: (l) => log.push(l) });
    expect(first.applied).toBe(true);
    expect(await columns('meeting')).toContain('source_type');
    // The fast path: schema.sql run as is, not the seconds-long migra diff (its speed is not a test's to bound).
    expect(log).toEqual([
      '-- empty database: running schema.sql',
      expect.stringMatching(/^-- partitions created: event_outbox_p\d{8}, /),
      expect.stringMatching(/^-- partitions created: segment_manifest_p\d{6}(, segment_manifest_p\d{6})?$/),
    ]);
    expect(first.statements).toHaveLength(1);

    const second = await applySchema(target.url);
    expect(second).toEqual({ statements: [], applied: false, dataSteps: {}, deferred: [] });
  });

  it('should reach the same state through the migra diff as through schema.sql', async () => {
    const plan = await applySchema(target.url, { dryRun: true });
    expect(plan.applied).toBe(false);
    expect(await columns('meeting')).toEqual([]); // dry run touched nothing
    expect(plan.statements.some((s) => /create table "public"\."recording_event_history"/.test(s))).toBe(true);

    await target.db.exec(['BEGIN', ...plan.statements, 'COMMIT'].join(';\n'));
    expect(await applySchema(target.url)).toEqual({ statements: [], applied: false, dataSteps: {}, deferred: [] });
  });

  it('should print the plan of an older shape on a dry run, then add the missing column and index', async () => {
    await applySchema(target.url);
    await target.db.exec('ALTER TABLE person DROP COLUMN company; DROP INDEX task_meeting_id_idx;');

    const dry = await applySchema(target.url, { dryRun: true });
    expect(dry.applied).toBe(false);
    expect(dry.statements).toEqual([
      expect.stringMatching(/add column "company" text/),
      expect.stringMatching(/CREATE INDEX task_meeting_id_idx/),
    ]);
    expect(await columns('person')).not.toContain('company');
    expect(await indexExists('task_meeting_id_idx')).toBe(false);

    const lines: string[] = [];
    const result = await applySchema(target.url, { log: (l) => lines.push(l) });
    expect(result).toEqual({ statements: dry.statements, applied: true, dataSteps: {}, deferred: [] });
    expect(lines.join('\n')).toMatch(/add column "company" text/);
    expect(await columns('person')).toContain('company');
    expect(await indexExists('task_meeting_id_idx')).toBe(true);
    expect((await applySchema(target.url)).statements).toEqual([]);
  });

  it("should bring a table's storage parameters to schema.sql, which migra does not diff", async () => {
    await applySchema(target.url);
    await target.db.exec(
      'ALTER TABLE transcript_segment RESET (fillfactor); ALTER TABLE meeting SET (fillfactor = 90);',
    );
    const result = await applySchema(target.url);
    expect(result.statements).toEqual([
      'alter table "public"."meeting" reset (fillfactor);',
      'alter table "public"."transcript_segment" set (fillfactor=70);',
    ]);
    const { rows } = await target.db.query(
      `SELECT relname, reloptions FROM pg_class WHERE relname IN ('meeting', 'transcript_segment') ORDER BY relname`,
    );
    expect(rows).toEqual([
      { relname: 'meeting', reloptions: null },
      { relname: 'transcript_segment', reloptions: ['fillfactor=70'] },
    ]);
  });

  it('should fill transcript_segment.user_id of segments written before the column existed, and keep it set for new ones', async () => {
    await applySchema(target.url);
    // The shape before GET /search kept no owner on segments.
    await target.db.exec(
      'DROP TRIGGER transcript_segment_derive ON transcript_segment; DROP POLICY owner ON transcript_segment; ALTER TABLE transcript_segment DROP COLUMN user_id;',
    );
    const one = async (sql: string, params: unknown[] = []) => (await target.db.query(sql, params)).rows[0];
    const user = (await one(`INSERT INTO app_user (username, email) VALUES ('a', 'a@example.com') RETURNING id`)).id;
    const meeting = (
      await one(
        `INSERT INTO meeting (user_id, title, source_type, start_time) VALUES ($1, 'm', 'text', now()) RETURNING id`,
        [user],
      )
    ).id;
    const transcription = (
      await one(`INSERT INTO transcription (meeting_id, status) VALUES ($1, 'completed') RETURNING id`, [meeting])
    ).id;
    await target.db.query(
      `INSERT INTO transcript_segment (transcription_id, text, start_ms) VALUES ($1, 'old budget', 0)`,
      [transcription],
    );

    const result = await applySchema(target.url);
    expect(result.statements).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/add column "user_id" uuid/),
        expect.stringMatching(/CREATE INDEX transcript_segment_user_id_text_search_idx/),
        expect.stringMatching(/CREATE TRIGGER transcript_segment_derive/),
      ]),
    );
    expect(result.dataSteps).toEqual({ 'transcript_segment.user_id': 1 });
    await target.db.query(
      `INSERT INTO transcript_segment (transcription_id, text, start_ms) VALUES ($1, 'new budget', 1)`,
      [transcription],
    );
    expect((await target.db.query('SELECT text, user_id FROM transcript_segment ORDER BY start_ms')).rows).toEqual([
      { text: 'old budget', user_id: user },
      { text: 'new budget', user_id: user },
    ]);
    expect((await applySchema(target.url)).statements).toEqual([]);
  });

  it('should refuse to drop an extra column unless destructive changes are allowed', async () => {
    await applySchema(target.url);
    await target.db.exec(
      `ALTER TABLE meeting ADD COLUMN legacy_notes text; INSERT INTO app_user (username, email) VALUES ('a', 'a@example.com');`,
    );

    // The dry run refuses as the apply does; neither drops anything.
    for (const dryRun of [true, false]) {
      const refused = await applySchema(target.url, { dryRun }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(DestructiveChangeError);
      expect((refused as DestructiveChangeError).statements).toEqual([
        expect.stringMatching(/drop column "legacy_notes"/),
      ]);
      expect(await columns('meeting')).toContain('legacy_notes');
    }
    expect((await applySchema(target.url, { dryRun: true, allowDestructive: true })).applied).toBe(false);

    const allowed = await applySchema(target.url, { allowDestructive: true });
    expect(allowed.applied).toBe(true);
    expect(await columns('meeting')).not.toContain('legacy_notes');
    expect((await target.db.query(`SELECT email FROM app_user`)).rows).toEqual([{ email: 'a@example.com' }]);
  });

  it('should widen a column without the flag and narrow one only with it', async () => {
    await applySchema(target.url);
    await target.db.exec(
      'ALTER TABLE tag ALTER COLUMN name TYPE varchar(20); ALTER TABLE segment_manifest ALTER COLUMN byte_count TYPE numeric;',
    );
    const type = async (table: string, column: string) =>
      (
        await target.db.query(
          `SELECT data_type FROM information_schema.columns WHERE table_name = $1 AND column_name = $2`,
          [table, column],
        )
      ).rows[0].data_type;
    // numeric -> bigint can lose fractions and large values: refused, nothing applied.
    const refused = await applySchema(target.url).catch((e: unknown) => e);
    expect((refused as DestructiveChangeError).statements).toEqual([
      expect.stringMatching(/"byte_count" set data type bigint/),
    ]);
    expect(await type('tag', 'name')).toBe('character varying');
    await applySchema(target.url, { allowDestructive: true });
    expect([await type('tag', 'name'), await type('segment_manifest', 'byte_count')]).toEqual(['text', 'bigint']);
    // varchar(20) -> text holds every value: no flag needed.
    await target.db.exec('ALTER TABLE tag ALTER COLUMN name TYPE varchar(20);');
    expect((await applySchema(target.url)).applied).toBe(true);
    expect(await type('tag', 'name')).toBe('text');
  });

  it('should apply nothing of a plan whose new unique index the data breaks', async () => {
    await applySchema(target.url);
    // Duplicate emails would make the re-added unique index fail after the column was re-added.
    await target.db.exec(`
      DROP INDEX app_user_email_key;
      ALTER TABLE person DROP COLUMN company;
      INSERT INTO app_user (username, email) VALUES ('a', 'same@example.com'), ('b', 'same@example.com');`);
    await expect(applySchema(target.url)).rejects.toBeInstanceOf(PreflightError);
    expect(await columns('person')).not.toContain('company');
  });
});
