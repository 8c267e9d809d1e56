// segment_manifest: one row per stored audio object covering an inclusive range of 100 ms
// frame sequences. Coverage (highest contiguous sequence, missing ranges) is derived from it.
// The table is partitioned by month of created_at (decision 0010), so its unique key holds
// created_at: a range is stored once because every writer of a take holds the take's row lock and
// reads the rows where it would write before inserting (group-commit.ts, the gap upload).
import type { Queryable } from '../db/pool';
import { coverageOf, type Coverage, type Range } from '../domain/coverage';

export { coverageOf, type Coverage } from '../domain/coverage';

export interface ManifestRow {
  id: string;
  meeting_id: string;
  audio_version: number;
  start_sequence: number;
  end_sequence: number;
  started_at_ms: number;
  duration_ms: number;
  object_name: string;
  object_generation: number | null;
  byte_count: number;
  crc32c: string;
  sha256: string | null;
  created_at: string;
}

export type ManifestInput = Omit<ManifestRow, 'id' | 'created_at' | 'sha256' | 'object_generation'> & {
  sha256?: string | null;
  object_generation?: number | null;
};

/** Inserts a row, under the take's row lock, where the writer found no row. */
export async function insertManifestRow(q: Queryable, row: ManifestInput): Promise<void> {
  await q.query(
    'manifest.insert',
    `INSERT INTO segment_manifest (meeting_id, audio_version, start_sequence, end_sequence, started_at_ms, duration_ms,
       object_name, object_generation, byte_count, crc32c, sha256)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    [
      row.meeting_id,
      row.audio_version,
      row.start_sequence,
      row.end_sequence,
      row.started_at_ms,
      row.duration_ms,
      row.object_name,
      row.object_generation ?? null,
      row.byte_count,
      row.crc32c,
      row.sha256 ?? null,
    ],
  );
}

export async function listManifest(q: Queryable, meetingId: string, audioVersion: number): Promise<ManifestRow[]> {
  const { rows } = await q.query<ManifestRow>(
    'manifest.list',
    'SELECT * FROM segment_manifest WHERE meeting_id = $1 AND audio_version = $2 ORDER BY start_sequence, end_sequence',
    [meetingId, audioVersion],
  );
  return rows;
}

/** Rows overlapping [start, end]. */
export async function overlappingRows(
  q: Queryable,
  meetingId: string,
  audioVersion: number,
  start: number,
  end: number,
): Promise<ManifestRow[]> {
  const { rows } = await q.query<ManifestRow>(
    'manifest.overlapping',
    `SELECT * FROM segment_manifest WHERE meeting_id = $1 AND audio_version = $2 AND start_sequence <= $4 AND end_sequence >= $3
     ORDER BY start_sequence`,
    [meetingId, audioVersion, start, end],
  );
  return rows;
}

/** Past every frame: the open end of a writer's "after my highest frame" range. */
export const NO_END = Number.MAX_SAFE_INTEGER;

export interface TakeRanges {
  meetingId: string;
  audioVersion: number;
  /**
   * The take's creation (recording.created_at): its rows are created later, so the months
   * before it are not read.
   */
  since: Date | string;
  /**
   * Inclusive ranges the writer knows nothing stored in (its holes, and [highest + 1, NO_END]),
   * each bounded on the left by a stored frame or by 0.
   */
  ranges: readonly Range[];
}

/**
 * The rows starting inside the given ranges, for many takes in one statement (a live instance's
 * group commit): one index range scan per range, so the work is the rows found, never the rows
 * the take already has. Rows never overlap, so a row the writer does not know lies wholly in one
 * of its unknown ranges, and starts there: these are all the rows it may collide with or lacks.
 */
export async function rowsStartingIn(q: Queryable, takes: TakeRanges[]): Promise<ManifestRow[]> {
  const flat = takes.flatMap((t) => t.ranges.map(([start, end]) => ({ ...t, start, end })));
  if (!flat.length) return [];
  // guard: manifest-read-since-take | remove: AND m.created_at >= t.since | test: test/live/commit-cost.test.ts :: no month before the take
  const { rows } = await q.query<ManifestRow>(
    'manifest.starting_in',
    `SELECT s.* FROM unnest($1::uuid[], $2::int[], $3::bigint[], $4::bigint[], $5::timestamptz[])
       AS t(meeting_id, audio_version, first, last, since)
     JOIN LATERAL (
       SELECT * FROM segment_manifest m
       WHERE m.meeting_id = t.meeting_id AND m.audio_version = t.audio_version AND m.start_sequence BETWEEN t.first AND t.last
         AND m.created_at >= t.since -- prunes the months before the take at run time
       OFFSET 0 -- kept a subquery: else it is flattened into a hash join over every row of the table
     ) s ON true
     ORDER BY s.meeting_id, s.audio_version, s.start_sequence`,
    [
      flat.map((r) => r.meetingId),
      flat.map((r) => r.audioVersion),
      flat.map((r) => r.start),
      flat.map((r) => r.end),
      flat.map((r) => r.since),
    ],
  );
  return rows;
}

/** Inserts many rows in one statement, under their takes' row locks, where the writer found none. */
export async function insertManifestRows(q: Queryable, rows: ManifestInput[]): Promise<void> {
  if (!rows.length) return;
  const col = <K extends keyof ManifestInput>(k: K) => rows.map((r) => r[k] ?? null);
  await q.query(
    'manifest.insert_many',
    `INSERT INTO segment_manifest (meeting_id, audio_version, start_sequence, end_sequence, started_at_ms, duration_ms,
       object_name, object_generation, byte_count, crc32c, sha256)
     SELECT * FROM unnest($1::uuid[], $2::int[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[],
       $7::text[], $8::bigint[], $9::bigint[], $10::text[], $11::text[])`,
    [
      col('meeting_id'),
      col('audio_version'),
      col('start_sequence'),
      col('end_sequence'),
      col('started_at_ms'),
      col('duration_ms'),
      col('object_name'),
      col('object_generation'),
      col('byte_count'),
      col('crc32c'),
      col('sha256'),
    ],
  );
}

export async function coverage(q: Queryable, meetingId: string, audioVersion: number): Promise<Coverage> {
  const { rows } = await q.query<ManifestRow>(
    'manifest.coverage',
    'SELECT start_sequence, end_sequence, byte_count FROM segment_manifest WHERE meeting_id = $1 AND audio_version = $2',
    [meetingId, audioVersion],
  );
  return coverageOf(rows);
}
