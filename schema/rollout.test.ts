// db:apply while the release before this one still runs on the database (schema/rollout.ts), as
// deployment has it: the schema is applied before the rollout. Round 3's sessions are unnamed,
// write the manifest `ON CONFLICT` on its old range key and declare no scope. Native PostgreSQL
// only: an older session beside the apply needs a backend of its own (PGlite has one, shared).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { createDatabase, type Database } from '../lib/db/pool';
import { dropEmptyManifestPartitions, ensurePartitions } from '../lib/repositories/partitions';
import { insertManifestRow } from '../lib/repositories/manifest';
import { fileDatabase } from '../test/harness';
import type { TestDatabase } from '../test/support/database';
import { until } from '../test/support/poll';
import { applySchema, OlderReleaseError } from './apply';
import { brokenInvariants } from './invariants';
import { RELEASES, releaseSqlPath } from './releases/seed';
import { enablesRowSecurity, olderSessions } from './rollout';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ROUND_3 = RELEASES.find((r) => r.name === 'round-3')!;
// Round 3's manifest write, as its lib/domain/manifest.ts made it.
const round3Write = (c: pg.Client, meeting: string, start: number) =>
  c.query(
    `INSERT INTO segment_manifest (meeting_id, audio_version, start_sequence, end_sequence, started_at_ms, duration_ms,
       object_name, object_generation, byte_count, crc32c, sha256)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
     ON CONFLICT (meeting_id, audio_version, start_sequence, end_sequence) DO NOTHING`,
    [meeting, 1, start, start + 49, start * 100, 5000, `recordings/${meeting}/1/${start}.seg`, 1, 160_000, 'crc', null],
  );

let database: TestDatabase | undefined;
const clients: pg.Client[] = [];
let today: Database | undefined;
afterEach(async () => {
  await today?.close();
  await Promise.allSettled(clients.splice(0).map((c) => c.end()));
  await database?.close();
  database = today = undefined;
});

/** The URL without the harness's application_name: each session below names itself. */
const unnamed = (url: string) => {
  const u = new URL(url);
  u.searchParams.delete('application_name');
  return u.toString();
};

/** A session named as `name` says (round 3's pools named none). */
async function connect(url: string, name: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: unnamed(url), application_name: name });
  await c.connect();
  clients.push(c);
  return c;
}

const kinds = async (db: pg.Client) =>
  (
    await db.query(`SELECT relname, relkind FROM pg_class
      WHERE relname IN ('event_outbox', 'segment_manifest') ORDER BY 1`)
  ).rows;
const unguarded = async (db: pg.Client) =>
  (
    await db.query(`SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace
      AND relkind IN ('r', 'p') AND NOT relispartition AND NOT (relrowsecurity AND relforcerowsecurity)`)
  ).rowCount;
const cli = (url: string, ...args: string[]) =>
  spawnSync('npx', ['tsx', 'schema/apply.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: url },
    encoding: 'utf8',
  });

describe.skipIf(inject('database').kind !== 'native')(
  'db:apply while an older release runs',
  { timeout: 180_000 },
  () => {
    it('should leave the manifest plain and row security off while round 3 is connected, and finish once it is gone', async () => {
      database = await fileDatabase({ schema: false });
      const { url } = database;
      const admin = await connect(url, 'rollout-test');
      await admin.query(readFileSync(releaseSqlPath(ROUND_3), 'utf8'));
      const older = await connect(url, ''); // round 3's pool
      const pid = (await older.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      const [{ id: user }] = (
        await older.query(`INSERT INTO app_user (username, email) VALUES ('a', 'a@example.test') RETURNING id`)
      ).rows;
      const [{ id: meeting }] = (
        await older.query(
          `INSERT INTO meeting (user_id, title, source_type, start_time) VALUES ($1, 'Standup', 'recording', now()) RETURNING id`,
          [user],
        )
      ).rows;
      expect((await round3Write(older, meeting, 0)).rowCount).toBe(1);

      // The operator's dry run names what waits, and for which session.
      const dry = cli(url, '--dry-run');
      expect(dry.status, dry.stderr).toBe(0);
      expect(dry.stdout).toContain(`pid ${pid}`);
      expect(dry.stdout).toMatch(/-- converting segment_manifest to a partitioned table/);
      expect(dry.stdout).toMatch(/ALTER TABLE meeting ENABLE ROW LEVEL SECURITY/);
      expect(await kinds(admin)).toEqual([
        { relname: 'event_outbox', relkind: 'r' },
        { relname: 'segment_manifest', relkind: 'r' },
      ]);

      // An owner without pg_read_all_stats (Cloud SQL's) sees it too.
      const viewer = `rollout_viewer_${pid}`;
      await admin.query(`CREATE ROLE ${viewer} LOGIN`);
      try {
        const u = new URL(unnamed(url));
        u.username = viewer;
        const unprivileged = await connect(u.toString(), 'rollout-test');
        expect((await olderSessions(unprivileged)).map((s) => s.pid)).toEqual([pid]);
        await unprivileged.end();
      } finally {
        await admin.query(`DROP ROLE ${viewer}`);
      }

      // Before the rollout: everything else applies.
      const first = await applySchema(url);
      expect(first.applied).toBe(true);
      expect(first.deferred).toContain('-- converting segment_manifest to a partitioned table');
      expect(first.deferred.filter(enablesRowSecurity).length).toBeGreaterThan(20);
      expect(await kinds(admin)).toEqual([
        { relname: 'event_outbox', relkind: 'p' },
        { relname: 'segment_manifest', relkind: 'r' },
      ]);
      // Round 3 goes on: its write with its conflict target, its reads declaring no scope.
      expect((await round3Write(older, meeting, 50)).rowCount).toBe(1);
      expect((await round3Write(older, meeting, 50)).rowCount).toBe(0);
      expect((await older.query('SELECT id FROM meeting WHERE user_id = $1', [user])).rows).toEqual([{ id: meeting }]);
      // And so does this release: its manifest write, the sweep's upkeep of partitions.
      today = createDatabase(unnamed(url), { max: 2 }); // named as this release names its sessions
      const row = { meeting_id: meeting, audio_version: 1, started_at_ms: 10_000, duration_ms: 5000 };
      const file = { object_name: 'recordings/x/1/100.seg', byte_count: 160_000, crc32c: 'crc' };
      await today
        .as({ service: 'live' })
        .withTransaction((tx) => insertManifestRow(tx, { ...row, ...file, start_sequence: 100, end_sequence: 149 }));
      expect(await ensurePartitions(today, 'segment_manifest')).toEqual([]);
      expect(await dropEmptyManifestPartitions(today)).toEqual({ dropped: [], held: [] });

      // After the rollout, with round 3 still connected: the bounded wait ends in exit 4, naming it.
      const timedOut = cli(url, '--wait-older-release', '0');
      expect(timedOut.status, timedOut.stderr).toBe(4);
      expect(timedOut.stderr).toContain(`pid ${pid}`);
      expect(await kinds(admin)).toContainEqual({ relname: 'segment_manifest', relkind: 'r' });
      const refused = await applySchema(url, { waitOlderReleaseMs: 0 }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(OlderReleaseError);

      // Once round 3 has gone, the waiting apply finishes; this release's sessions do not hold it.
      const held = await today.pool.connect();
      const lines: string[] = [];
      const finishing = applySchema(url, { waitOlderReleaseMs: 60_000, log: (l) => lines.push(l) });
      await until('the apply waiting for round 3', () => lines.some((l) => l.startsWith('-- waiting up to 60 s')));
      await older.end();
      const done = await finishing;
      held.release();
      expect(done.deferred).toEqual([]);
      expect(await kinds(admin)).toEqual([
        { relname: 'event_outbox', relkind: 'p' },
        { relname: 'segment_manifest', relkind: 'p' },
      ]);
      expect(await unguarded(admin)).toBe(0);
      await admin.query(`SELECT set_config('app.service', 'test', false)`);
      expect((await admin.query('SELECT start_sequence FROM segment_manifest ORDER BY 1')).rows).toEqual([
        { start_sequence: 0 },
        { start_sequence: 50 },
        { start_sequence: 100 },
      ]);
      expect(await brokenInvariants(admin)).toEqual({});
      // What it waited for: round 3's write has no key to name now.
      const late = await connect(url, '');
      await expect(round3Write(late, meeting, 150)).rejects.toMatchObject({ code: '42P10' });
      expect(await applySchema(url)).toEqual({ statements: [], applied: false, dataSteps: {}, deferred: [] });
    });
  },
);

describe('db:apply --wait-older-release', () => {
  it('should refuse a wait that is not whole seconds, and an unknown flag, before touching a database', () => {
    const nowhere = 'postgres://nobody@127.0.0.1:1/none';
    const fraction = cli(nowhere, '--wait-older-release', '1.5');
    expect(fraction.status).toBe(1);
    expect(fraction.stderr).toContain('--wait-older-release takes whole seconds; usage: db:apply');
    const unknown = cli(nowhere, '--wait-older');
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toMatch(/Unknown option '--wait-older'.*usage: db:apply/);
  });
});
