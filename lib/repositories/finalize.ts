// The repository side of finalizing a stopped take (the sweep's deadline handling,
// decisions.md section 5.4; the operation itself is lib/use-cases/recording.ts finalizeTake):
// which takes are due, claiming them, the sequence-ordered chain of segments to compose (the
// composing itself: lib/objects/take-audio.ts), pointing meeting_audio_file at it and marking the
// transcription degraded when ranges are still missing.
// Exactly once: a take is claimed with an atomic stopped → finalizing update; a claim left by
// a crashed sweep is retried once it is stale.
import type { Queryable } from '../db/pool';
import { coverageOf, listManifest, type ManifestRow } from './manifest';
import type { Recording } from './recordings';

/**
 * Stopped takes due for finalizing: past their gap upload deadline, or stopped by the user and
 * with no missing range. A take the server stopped (connection_closed, max_duration) may lack
 * a tail only its client knows of (frames recorded while it was away, never sent): it waits
 * for its deadline, so that the client can come back and upload them.
 * A take has no missing range when every manifest row not starting at 0 is reached by a row
 * that starts earlier (the SQL form of coverageOf(...).missing_ranges being empty).
 */
export async function dueTakes(q: Queryable, limit: number): Promise<Recording[]> {
  const { rows } = await q.query<Recording>(
    'finalize.due',
    `SELECT r.* FROM recording r
     WHERE r.state = 'stopped'
       -- A take of an account being erased is about to be deleted, not finalized.
       AND NOT EXISTS (SELECT 1 FROM meeting m JOIN account_erasure e ON e.user_id = m.user_id WHERE m.id = r.meeting_id)
       AND (r.gap_upload_deadline IS NULL OR r.gap_upload_deadline <= now()
            OR r.stop_reason = 'user' AND NOT EXISTS (
              SELECT 1 FROM segment_manifest s
              WHERE s.meeting_id = r.meeting_id AND s.audio_version = r.audio_version AND s.start_sequence > 0
                AND NOT EXISTS (
                  SELECT 1 FROM segment_manifest p
                  WHERE p.meeting_id = s.meeting_id AND p.audio_version = s.audio_version
                    AND p.start_sequence < s.start_sequence AND p.end_sequence >= s.start_sequence - 1)))
     ORDER BY r.stopped_at LIMIT $1`,
    [limit],
  );
  return rows;
}

/** stopped → finalizing; null when another sweep (or nothing) got there first. */
export async function claimForFinalize(
  q: Queryable,
  meetingId: string,
  audioVersion: number,
): Promise<Recording | null> {
  const { rows } = await q.query<Recording>(
    'finalize.claim',
    `UPDATE recording SET state = 'finalizing', updated_at = now()
     WHERE meeting_id = $1 AND audio_version = $2 AND state = 'stopped' RETURNING *`,
    [meetingId, audioVersion],
  );
  return rows[0] ?? null;
}

/** Re-claims finalizing takes untouched for staleMs (their sweep died); each goes to one caller. */
export async function reclaimStale(q: Queryable, staleMs: number): Promise<Recording[]> {
  // Atomic: a concurrent sweep blocks on the row, re-reads updated_at and skips it.
  const { rows } = await q.query<Recording>(
    'finalize.reclaim',
    `UPDATE recording SET updated_at = now()
     WHERE state = 'finalizing' AND updated_at < now() - make_interval(secs => $1::double precision / 1000)
     RETURNING *`,
    [staleMs],
  );
  return rows;
}

/** Gives a failed claim back so that the next sweep retries it at once. */
export async function releaseClaim(q: Queryable, rec: Recording): Promise<void> {
  await q.query(
    'finalize.release',
    `UPDATE recording SET state = 'stopped', updated_at = now() WHERE meeting_id = $1 AND audio_version = $2 AND state = 'finalizing'`,
    [rec.meeting_id, rec.audio_version],
  );
}

/** Rows forming one sequence-ordered chain: a row wholly inside an earlier one is skipped. */
function compositionOf(rows: ManifestRow[]): ManifestRow[] {
  const chain: ManifestRow[] = [];
  let coveredTo = -1;
  for (const r of [...rows].sort((a, b) => a.start_sequence - b.start_sequence || b.end_sequence - a.end_sequence)) {
    if (r.end_sequence <= coveredTo) continue;
    chain.push(r);
    coveredTo = r.end_sequence;
  }
  return chain;
}

/** Rows forming the take's audio (sequence order, rows wholly inside an earlier one skipped) and its coverage. */
export async function takeComposition(q: Queryable, rec: Recording) {
  const rows = await listManifest(q, rec.meeting_id, rec.audio_version);
  return { rows, chain: compositionOf(rows), cov: coverageOf(rows) };
}

/** finalizing → finalized; the owner's id, or null when another sweep (that re-claimed it) finalized it meanwhile. */
export async function markFinalized(tx: Queryable, rec: Recording): Promise<string | null> {
  const { rows } = await tx.query<{ user_id: string }>(
    'finalize.mark',
    `UPDATE recording r SET state = 'finalized', finalized_at = now(), updated_at = now()
     FROM meeting m WHERE m.id = r.meeting_id AND r.meeting_id = $1 AND r.audio_version = $2 AND r.state = 'finalizing'
     RETURNING m.user_id`,
    [rec.meeting_id, rec.audio_version],
  );
  return rows[0]?.user_id ?? null;
}

/** Points meeting_audio_file at the take's composed audio, unless a newer take of the meeting is finalized. */
export async function setTakeAudio(tx: Queryable, rec: Recording, storagePath: string): Promise<void> {
  // An older take finishing late must not replace a newer take's audio.
  await tx.query(
    'finalize.audio_file',
    `INSERT INTO meeting_audio_file (meeting_id, storage_path)
     SELECT $1, $2 WHERE NOT EXISTS (SELECT 1 FROM recording WHERE meeting_id = $1 AND audio_version > $3 AND state = 'finalized')
     ON CONFLICT (meeting_id) DO UPDATE SET storage_path = EXCLUDED.storage_path, created_at = now()`,
    [rec.meeting_id, storagePath, rec.audio_version],
  );
}

/** Marks the take's transcription degraded (frames missing); false when it already was. */
export async function markDegraded(tx: Queryable, transcriptionId: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    'finalize.degrade',
    'UPDATE transcription SET is_degraded = true, updated_at = now() WHERE id = $1 AND NOT is_degraded',
    [transcriptionId],
  );
  return (rowCount ?? 0) > 0;
}

/** Whether the take's row still exists (an account erasure deletes it). */
export async function takeExists(q: Queryable, rec: Recording): Promise<boolean> {
  const { rows } = await q.query(
    'finalize.take_exists',
    'SELECT 1 FROM recording WHERE meeting_id = $1 AND audio_version = $2',
    [rec.meeting_id, rec.audio_version],
  );
  return rows.length > 0;
}

/** The finalized take a transcription belongs to (null: none, e.g. one created through the API). */
export async function finalizedTake(q: Queryable, transcriptionId: string): Promise<Recording | null> {
  const { rows } = await q.query<Recording>(
    'finalize.take_of_transcription',
    `SELECT * FROM recording WHERE transcription_id = $1 AND state = 'finalized'`,
    [transcriptionId],
  );
  return rows[0] ?? null;
}
