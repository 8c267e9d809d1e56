// segment_manifest: one row per stored audio object covering an inclusive range of 100 ms
// frame sequences. Coverage (highest contiguous sequence, missing ranges) is derived from it.
import type { Queryable } from '../db/pool';

const pad = (n: number) => String(n).padStart(10, '0');

/** Where the live service stores a take's segments (gap uploads: gapObjectName). */
export const segmentPrefix = (meetingId: string, audioVersion: number) => `recordings/${meetingId}/${audioVersion}/`;
export const segmentObjectName = (t: { meetingId: string; audioVersion: number }, start: number, end: number) =>
  `${segmentPrefix(t.meetingId, t.audioVersion)}${pad(start)}-${pad(end)}.seg`;

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
  created_at: Date;
}

export type ManifestInput = Omit<ManifestRow, 'id' | 'created_at' | 'sha256' | 'object_generation'> & {
  sha256?: string | null;
  object_generation?: number | null;
};

export interface Coverage {
  /** Every frame 0..this is stored; -1 when frame 0 is not. */
  highest_contiguous_sequence: number;
  /** Inclusive [start, end] ranges below the highest stored sequence that no row covers. */
  missing_ranges: [number, number][];
  frames_stored: number;
  bytes_stored: number;
  highest_sequence: number;
}

/** Inserts a row; false when the identical range is already there (a retried flush). */
export async function insertManifestRow(q: Queryable, row: ManifestInput): Promise<boolean> {
  const { rowCount } = await q.query(
    'manifest.insert',
    `INSERT INTO segment_manifest (meeting_id, audio_version, start_sequence, end_sequence, started_at_ms, duration_ms,
       object_name, object_generation, byte_count, crc32c, sha256)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
     ON CONFLICT (meeting_id, audio_version, start_sequence, end_sequence) DO NOTHING`,
    [row.meeting_id, row.audio_version, row.start_sequence, row.end_sequence, row.started_at_ms, row.duration_ms, row.object_name, row.object_generation ?? null, row.byte_count, row.crc32c, row.sha256 ?? null],
  );
  return rowCount === 1;
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
export async function overlappingRows(q: Queryable, meetingId: string, audioVersion: number, start: number, end: number): Promise<ManifestRow[]> {
  const { rows } = await q.query<ManifestRow>(
    'manifest.overlapping',
    `SELECT * FROM segment_manifest WHERE meeting_id = $1 AND audio_version = $2 AND start_sequence <= $4 AND end_sequence >= $3
     ORDER BY start_sequence`,
    [meetingId, audioVersion, start, end],
  );
  return rows;
}

/**
 * Rows starting at or after `fromSequence` (an index range scan). With non-overlapping rows and
 * everything below `fromSequence` stored, these are all the rows a writer of later frames can
 * collide with, and all the rows it may not know about yet.
 */
export async function rowsStartingFrom(q: Queryable, meetingId: string, audioVersion: number, fromSequence: number): Promise<ManifestRow[]> {
  const { rows } = await q.query<ManifestRow>(
    'manifest.starting_from',
    `SELECT * FROM segment_manifest WHERE meeting_id = $1 AND audio_version = $2 AND start_sequence >= $3 ORDER BY start_sequence`,
    [meetingId, audioVersion, fromSequence],
  );
  return rows;
}

export interface TakeFrom {
  meetingId: string;
  audioVersion: number;
  fromSequence: number;
}

/** rowsStartingFrom for many takes in one statement (a live instance's group commit). */
export async function rowsStartingFromMany(q: Queryable, takes: TakeFrom[]): Promise<ManifestRow[]> {
  if (!takes.length) return [];
  const { rows } = await q.query<ManifestRow>(
    'manifest.starting_from_many',
    `SELECT s.* FROM segment_manifest s
     JOIN unnest($1::uuid[], $2::int[], $3::bigint[]) AS t(meeting_id, audio_version, from_sequence)
       ON s.meeting_id = t.meeting_id AND s.audio_version = t.audio_version AND s.start_sequence >= t.from_sequence
     ORDER BY s.meeting_id, s.audio_version, s.start_sequence`,
    [takes.map((t) => t.meetingId), takes.map((t) => t.audioVersion), takes.map((t) => t.fromSequence)],
  );
  return rows;
}

/** Inserts many rows in one statement; ranges already present are skipped. */
export async function insertManifestRows(q: Queryable, rows: ManifestInput[]): Promise<void> {
  if (!rows.length) return;
  const col = <K extends keyof ManifestInput>(k: K) => rows.map((r) => r[k] ?? null);
  await q.query(
    'manifest.insert_many',
    `INSERT INTO segment_manifest (meeting_id, audio_version, start_sequence, end_sequence, started_at_ms, duration_ms,
       object_name, object_generation, byte_count, crc32c, sha256)
     SELECT * FROM unnest($1::uuid[], $2::int[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[],
       $7::text[], $8::bigint[], $9::bigint[], $10::text[], $11::text[])
     ON CONFLICT (meeting_id, audio_version, start_sequence, end_sequence) DO NOTHING`,
    [
      col('meeting_id'), col('audio_version'), col('start_sequence'), col('end_sequence'), col('started_at_ms'), col('duration_ms'),
      col('object_name'), col('object_generation'), col('byte_count'), col('crc32c'), col('sha256'),
    ],
  );
}

export function coverageOf(rows: Pick<ManifestRow, 'start_sequence' | 'end_sequence' | 'byte_count'>[]): Coverage {
  const sorted = [...rows].sort((a, b) => a.start_sequence - b.start_sequence);
  const missing: [number, number][] = [];
  let next = 0; // first sequence not yet covered
  let highestContiguous = -1;
  let frames = 0;
  let bytes = 0;
  for (const r of sorted) {
    bytes += r.byte_count;
    if (r.start_sequence > next) missing.push([next, r.start_sequence - 1]);
    if (r.end_sequence >= next) {
      frames += r.end_sequence - Math.max(next, r.start_sequence) + 1;
      next = r.end_sequence + 1;
    }
    if (missing.length === 0) highestContiguous = next - 1;
  }
  return { highest_contiguous_sequence: highestContiguous, missing_ranges: missing, frames_stored: frames, bytes_stored: bytes, highest_sequence: next - 1 };
}

export async function coverage(q: Queryable, meetingId: string, audioVersion: number): Promise<Coverage> {
  const { rows } = await q.query<ManifestRow>(
    'manifest.coverage',
    'SELECT start_sequence, end_sequence, byte_count FROM segment_manifest WHERE meeting_id = $1 AND audio_version = $2',
    [meetingId, audioVersion],
  );
  return coverageOf(rows);
}
