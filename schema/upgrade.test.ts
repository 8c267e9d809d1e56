// Every released schema (schema/releases: main's schema.sql at each landed stop), seeded by the
// rules of its time, upgraded with db:apply on the run's engine: every row kept, every invariant
// of today's schema and decisions holding, and nothing left to do.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { fileDatabase } from '../test/harness';
import type { TestDatabase } from '../test/support/database';
import { applySchema, PreflightError } from './apply';
import { brokenInvariants, rowCounts } from './invariants';
import { rewritesTable } from './online';
import { RELEASES, releaseSqlPath, seed, type Release } from './releases/seed';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
let database: TestDatabase | undefined;
let client: pg.Client | undefined;
afterEach(async () => {
  await client?.end();
  await database?.close();
  client = database = undefined;
});

async function released(release: Release): Promise<{ url: string; db: pg.Client }> {
  database = await fileDatabase({ schema: false });
  client = new pg.Client({ connectionString: database.url });
  await client.connect();
  await client.query(readFileSync(releaseSqlPath(release), 'utf8'));
  return { url: database.url, db: client };
}

const normalise = (v: number[]) => {
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
};
const parse = (text: string) => JSON.parse(text) as number[];

describe('upgrading a released schema', { timeout: 180_000 }, () => {
  it.each(RELEASES)(
    "should bring a database of $name to today's schema keeping every row and invariant",
    async (release) => {
      const { url, db } = await released(release);
      const seeded = await seed(db, release);
      const before = await rowCounts(db);

      const result = await applySchema(url); // no --allow-destructive: an upgrade loses nothing
      // Search vectors are added as plain columns and filled in batches: no table is rewritten.
      expect(result.statements.filter(rewritesTable)).toEqual([]);
      expect(result.applied).toBe(release.name !== 'round-3' || result.statements.length > 0);

      const after = await rowCounts(db);
      for (const [table, n] of Object.entries(before)) expect({ table, n: after[table] }).toEqual({ table, n });
      expect(await brokenInvariants(db)).toEqual({});
      // The tables partitioned by time (decision 0010), plain then: converted, their rows kept in
      // the partition before the cutover, the periods after it made ahead.
      const kinds = await db.query(`SELECT relname, relkind FROM pg_class
          WHERE relname IN ('event_outbox', 'segment_manifest') ORDER BY 1`);
      expect(kinds.rows).toEqual([
        { relname: 'event_outbox', relkind: 'p' },
        { relname: 'segment_manifest', relkind: 'p' },
      ]);
      const holding = await db.query('SELECT DISTINCT tableoid::regclass::text AS part FROM segment_manifest');
      expect(holding.rows).toEqual([{ part: expect.stringMatching(/^segment_manifest_before_\d{8}$/) }]);
      // The person's voice is their 11 samples (9 of the live meeting, 2 of the deleted one),
      // computed here independently of the SQL that backfilled it.
      const sum = seeded.personSamples.map(normalise).reduce((acc, v) => acc.map((x, i) => x + v[i]));
      const { rows } = await db.query(
        'SELECT voice_sample_count, voice_vector::text, voice_confidence FROM person WHERE id = $1',
        [seeded.person],
      );
      expect(rows[0].voice_sample_count).toBe(11);
      const vector = parse(rows[0].voice_vector);
      for (const [i, x] of normalise(sum).entries()) expect(vector[i]).toBeCloseTo(x, 4);
      expect(Number(rows[0].voice_confidence)).toBeCloseTo(Math.hypot(...sum) / 11, 4);
      expect((await db.query('SELECT count(*)::int AS n FROM voice_sample')).rows[0].n).toBe(11);
      // The tenant boundary it never had (issue 38): every table's policy, forced, and the runtime roles' grants.
      const unguarded = await db.query(`SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace
          AND relkind IN ('r', 'p') AND NOT relispartition AND NOT (relrowsecurity AND relforcerowsecurity)`);
      expect(unguarded.rows).toEqual([]);
      const grants = await db.query(`SELECT has_table_privilege('mi_api', 'meeting', 'INSERT') AS api_inserts,
          has_table_privilege('mi_sweep', 'meeting', 'INSERT') AS sweep_inserts,
          has_table_privilege('mi_sweep', 'event_outbox', 'INSERT') AS sweep_events`);
      expect(grants.rows[0]).toEqual({ api_inserts: true, sweep_inserts: false, sweep_events: true });

      // Nothing left: the schema is today's and the data steps find nothing to do.
      expect(await applySchema(url)).toEqual({ statements: [], applied: false, dataSteps: {}, deferred: [] });
    },
  );

  it('should refuse, naming the rows and the fix, a plan whose new unique index the data breaks, and apply nothing', async () => {
    const release = RELEASES[0]; // emails were unique case-sensitively then
    const { url, db } = await released(release);
    const { rows } = await db.query(
      `INSERT INTO app_user (username, email)
          VALUES ('a', 'alice@x.test'), ('A', 'Alice@x.test'), ('c', 'carol@x.test') RETURNING id`,
    );
    const before = await rowCounts(db);

    // The operator's dry run first: it exits as the apply would (3), naming the same rows.
    const dry = spawnSync('npx', ['tsx', 'schema/apply.ts', '--dry-run'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: url },
      encoding: 'utf8',
    });
    expect(dry.status, dry.stderr).toBe(3);
    expect(dry.stderr).toContain(rows[1].id);
    expect(dry.stderr).toMatch(/app_user_email_key/);
    expect(await rowCounts(db)).toEqual(before);

    const refused = await applySchema(url).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PreflightError);
    const [offence] = (refused as PreflightError).offences;
    expect(offence).toMatchObject({ table: 'app_user', count: 1 });
    expect(offence.statement).toMatch(/CREATE UNIQUE INDEX app_user_email_key/);
    expect(JSON.parse(offence.rows[0])).toEqual({
      key: ['alice@x.test'],
      rows: expect.arrayContaining([{ id: rows[0].id }, { id: rows[1].id }]),
    });
    expect(offence.fix).toMatch(/lower\(btrim\(normalize\(email/i);
    expect((refused as Error).message).toContain(rows[1].id);
    // Nothing applied: the old index is there, no new column, every row as it was.
    const old = await db.query(`SELECT 1 FROM pg_indexes WHERE indexname = 'ai_thread_user_id_idx'`);
    expect(old.rowCount).toBe(1);
    const column = await db.query(`SELECT 1 FROM information_schema.columns
        WHERE table_name = 'transcript_segment' AND column_name = 'user_id'`);
    expect(column.rowCount).toBe(0);
    expect(await rowCounts(db)).toEqual(before);

    // The fix the message names, then the upgrade goes through.
    await db.query(`UPDATE app_user SET email = 'alice2@x.test' WHERE id = $1`, [rows[1].id]);
    expect((await applySchema(url)).applied).toBe(true);
    expect(await brokenInvariants(db)).toEqual({});
  });
});
