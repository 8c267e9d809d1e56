// A live commit's work does not grow with the take (issue #12): it reads only the manifest rows
// its recorder does not know of yet (in its holes and past its highest stored frame), never the
// rows it already learned. A take with one early hole and 40,000 later rows: the commit after the
// recorder learned them reads ~0 rows, where reading "everything past the contiguous point"
// read all 40,000 again on every commit.
//
// What a commit reads is measured on the database itself: each manifest SELECT the commit's
// transaction ran is run again and the rows of segment_manifest it scanned or fetched are counted
// (pg_stat_xact_user_tables, over its partitions), so a plan that reads the table and filters counts too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OpenedDatabase } from '@mi/lib/db/open';
import type { Database, Queryable } from '@mi/lib/db/pool';
import type { QueryResultRow } from 'pg';
import {
  TestClient,
  createMeeting,
  fileEnv,
  openTestDatabase,
  range,
  startInstance,
  token,
  type Instance,
} from './helpers';
import { sleep } from '../support/poll';
import { ensurePartitions } from '@mi/lib/repositories/partitions';

const LATER_ROWS = 40_000;
const HOLE = 10; // frames 0..9 stored, 10 missing, 11..40,010 stored by "another writer"

interface Statement {
  name: string;
  text: string;
  params: unknown[];
  rows: number;
}

/** The database as is, noting the manifest statements run inside transactions (the commits). */
function noting(db: Database, seen: Statement[]): Database {
  const watch = (tx: Queryable): Queryable => ({
    async query<R extends QueryResultRow>(name: string, text: string, params: unknown[] = []) {
      const res = await tx.query<R>(name, text, params);
      if (name.startsWith('manifest.')) seen.push({ name, text, params, rows: res.rowCount ?? 0 });
      return res;
    },
  });
  return {
    pool: db.pool,
    get retries() {
      return db.retries;
    },
    as: (scope) => noting(db.as(scope), seen),
    query: (name, text, params) => db.query(name, text, params),
    withTransaction: (fn) => db.withTransaction((tx) => fn(watch(tx))),
    close: () => db.close(),
  };
}

/**
 * Rows of segment_manifest the statement reads, and the partitions it scans: run again as it was,
 * in a transaction of its own, counting the rows its partitions scanned and fetched through
 * indexes (this backend's own counters).
 */
async function manifestReads(db: Database, s: Statement): Promise<{ rows: number; scanned: string[] }> {
  return db.withTransaction(async (tx) => {
    const read = async () =>
      (
        await tx.query<{ part: string; rows: string; scans: string }>(
          'test.rows_read',
          `SELECT s.relname AS part, coalesce(s.seq_tup_read, 0) + coalesce(s.idx_tup_fetch, 0) AS rows,
                  coalesce(s.seq_scan, 0) + coalesce(s.idx_scan, 0) AS scans
             FROM pg_stat_xact_user_tables s JOIN pg_inherits i ON i.inhrelid = s.relid
            WHERE i.inhparent = 'segment_manifest'::regclass`,
        )
      ).rows;
    const before = new Map((await read()).map((r) => [r.part, r]));
    await tx.query(s.name, s.text, s.params);
    const after = await read();
    const grew = (r: (typeof after)[number], k: 'rows' | 'scans') =>
      Number(r[k]) - Number(before.get(r.part)?.[k] ?? 0);
    return {
      rows: after.reduce((n, r) => n + grew(r, 'rows'), 0),
      scanned: after.filter((r) => grew(r, 'scans') > 0).map((r) => r.part),
    };
  });
}

let database: OpenedDatabase;
let instance: Instance;
const seen: Statement[] = [];

beforeAll(async () => {
  database = await openTestDatabase();
  // Progress by interval only: learning 40,000 rows must not append hundreds of progress events.
  instance = await startInstance(
    database,
    { ...fileEnv(), ML_SERVICE_URL: 'http://127.0.0.1:9', RECORDING_PROGRESS_EVERY_FRAMES: '1000000' },
    { served: (db) => noting(db, seen) },
  );
}, 60_000);
afterAll(async () => {
  await instance?.close();
  await database?.close();
});

describe('live commit cost', () => {
  it('should read ~0 manifest rows and no month before the take for a commit on a take with an early hole and 40,000 later rows it already knows', async () => {
    // A month long past (decision 0010): the commit's read skips the months before its take.
    expect(await ensurePartitions(database.db, 'segment_manifest', new Date('2001-01-15T00:00:00Z'))).toEqual([
      'segment_manifest_p200101',
    ]);
    const t = await token(instance.config, 'commit-cost');
    const meetingId = await createMeeting(instance, t);
    const client = await TestClient.connect(instance.wsUrl, t);
    await client.start(meetingId);
    for (const seq of range(0, HOLE - 1)) client.frame(seq);
    await client.acked(meetingId, HOLE - 1);

    // Another writer's rows past the hole (one frame each), as a resumed take's other owner leaves them.
    const first = HOLE + 1;
    const last = HOLE + LATER_ROWS;
    await database.db.query(
      'test.later_rows',
      `INSERT INTO segment_manifest (meeting_id, audio_version, start_sequence, end_sequence, started_at_ms, duration_ms, object_name, byte_count, crc32c)
       SELECT $1::uuid, 1, s, s, s * 100, 100, 'recordings/' || $1::text || '/other/' || s, 3200, 'AAAAAA==' FROM generate_series($2::bigint, $3::bigint) AS s`,
      [meetingId, first, last],
    );
    await database.db.query('test.analyze', 'ANALYZE segment_manifest');

    const commitOf = async (seq: number) => {
      seen.length = 0;
      client.frame(seq);
      for (let i = 0; ; i++) {
        const { rowCount } = await database.db.query(
          'test.stored',
          'SELECT 1 FROM segment_manifest WHERE meeting_id = $1 AND start_sequence = $2',
          [meetingId, seq],
        );
        if (rowCount) break;
        if (i === 400) throw new Error(`frame ${seq} was not stored within 20 s`);
        await sleep(50);
      }
      const reads = seen.filter((s) => /^\s*SELECT/i.test(s.text));
      expect(reads.length, `the commit of frame ${seq} read the manifest`).toBeGreaterThan(0);
      let rowsRead = 0;
      const scanned = new Set<string>();
      for (const s of reads) {
        const r = await manifestReads(database.db, s);
        rowsRead += r.rows;
        for (const p of r.scanned) scanned.add(p);
      }
      return { returned: reads.reduce((n, s) => n + s.rows, 0), rowsRead, scanned: [...scanned] };
    };

    // The first commit past them learns the other writer's 40,000 rows: work for rows new to it.
    const learning = await commitOf(last + 1);
    expect(learning.returned).toBe(LATER_ROWS);
    expect(learning.rowsRead).toBeGreaterThanOrEqual(LATER_ROWS); // the count sees what is read
    // Every later commit reads only what is new: the hole (empty) and past the highest frame.
    const next = await commitOf(last + 2);
    console.log(
      `commit cost: learning commit returned ${learning.returned} rows (read ${learning.rowsRead}); the next returned ${next.returned} (read ${next.rowsRead})`,
    );
    expect(next.returned).toBeLessThanOrEqual(1);
    expect(next.rowsRead).toBeLessThanOrEqual(5);
    expect(next.scanned).toContain(`segment_manifest_p${new Date().toISOString().slice(0, 7).replace('-', '')}`);
    expect(next.scanned).not.toContain('segment_manifest_p200101');

    // The recorder's view is the stored one: frames 0..9, the hole at 10, everything after it.
    const stopped = await client.stop(meetingId);
    expect(stopped).toMatchObject({ highest_contiguous_sequence: HOLE - 1, missing_ranges: [[HOLE, HOLE]] });
    await client.waitFor({
      type: 'AudioStoredProgressEvent',
      frames_stored: HOLE + LATER_ROWS + 2,
      highest_contiguous_sequence: HOLE - 1,
    });
    client.close();
  }, 90_000);
});
