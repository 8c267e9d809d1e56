// Purge (decisions.md section 6 "Lifecycle"): meetings soft-deleted more than
// MEETING_PURGE_AFTER_DAYS ago are removed by the sweep with their rows (the meeting's cascades),
// their stored objects and their voice samples, in bounded batches (the operation:
// lib/use-cases/meetings.ts purgeDeletedMeetings). Objects go first and the rows last: until its
// row is gone a meeting is still found here, so a pass cut short anywhere is finished by the next
// one (deleting objects is idempotent), and no object is ever left without the row that leads to
// it. A soft-deleted meeting gets no new objects (uploads, gap uploads and takes need a live
// meeting).
import type { Queryable } from '../db/pool';

export const PURGE_BATCH_MEETINGS = 50;
/** Batches per sweep pass: a backlog is worked off over several passes. */
export const PURGE_MAX_BATCHES = 10;

/** Meetings deleted more than afterDays ago, oldest deletion first (walks meeting_deleted_at_idx). */
export async function meetingsDueForPurge(q: Queryable, afterDays: number, limit: number): Promise<string[]> {
  const { rows } = await q.query<{ id: string }>(
    'purge.due',
    `SELECT id FROM meeting WHERE deleted_at < now() - make_interval(days => $1) ORDER BY deleted_at LIMIT $2`,
    [afterDays, limit],
  );
  return rows.map((m) => m.id);
}

/**
 * Those of the meetings still due, locked; another sweep purging the same batch skips what this one holds.
 * No guard: the lock only spares a second sweep the wait (a soft delete is never undone, and its
 * deletes of rows the first already deleted find nothing).
 */
export async function lockForPurge(tx: Queryable, ids: string[], afterDays: number): Promise<string[]> {
  const { rows } = await tx.query<{ id: string }>(
    'purge.lock',
    'SELECT id FROM meeting WHERE id = ANY($1::uuid[]) AND deleted_at < now() - make_interval(days => $2) FOR UPDATE SKIP LOCKED',
    [ids, afterDays],
  );
  return rows.map((m) => m.id);
}

export async function ownersOfPeople(q: Queryable, people: string[]): Promise<{ id: string; user_id: string }[]> {
  const { rows } = await q.query<{ id: string; user_id: string }>(
    'purge.people',
    'SELECT id, user_id FROM person WHERE id = ANY($1::uuid[])',
    [people],
  );
  return rows;
}

/** Deletes the meetings (their rows cascade); how many were deleted. */
export async function deleteMeetings(tx: Queryable, ids: string[]): Promise<number> {
  const { rowCount } = await tx.query('purge.delete', 'DELETE FROM meeting WHERE id = ANY($1::uuid[])', [ids]);
  return rowCount ?? 0;
}
