// Purge (decisions.md section 6 "Lifecycle"): meetings soft-deleted more than
// MEETING_PURGE_AFTER_DAYS ago are removed by the sweep with their rows (the meeting's cascades),
// their stored objects and their voice samples, in bounded batches. Objects go first and the
// rows last: until its row is gone a meeting is still found here, so a pass cut short anywhere
// is finished by the next one (deleting objects is idempotent), and no object is ever left
// without the row that leads to it. A soft-deleted meeting gets no new objects (uploads, gap
// uploads and takes need a live meeting).
import type { Database } from '../db/pool';
import type { ObjectStore } from '../storage';
import { removeMeetingObjects } from './meeting-objects';

export const PURGE_BATCH_MEETINGS = 50;
/** Batches per sweep pass: a backlog is worked off over several passes. */
export const PURGE_MAX_BATCHES = 10;

export interface PurgeDeps {
  db: Database;
  store: ObjectStore;
}

export async function purgeDeletedMeetings(deps: PurgeDeps, afterDays: number, opts: { batch?: number; maxBatches?: number } = {}): Promise<number> {
  const batch = opts.batch ?? PURGE_BATCH_MEETINGS;
  let purged = 0;
  for (let b = 0; b < (opts.maxBatches ?? PURGE_MAX_BATCHES); b++) {
    // Walks meeting_deleted_at_idx from the oldest deletion.
    const { rows } = await deps.db.query<{ id: string }>(
      'purge.due',
      `SELECT id FROM meeting WHERE deleted_at < now() - make_interval(days => $1) ORDER BY deleted_at LIMIT $2`,
      [afterDays, batch],
    );
    if (!rows.length) break;
    for (const m of rows) await removeMeetingObjects(deps.store, m.id);
    purged += await deps.db.withTransaction(async (tx) => {
      // Another sweep purging the same batch skips what this one holds.
      const { rows: locked } = await tx.query<{ id: string }>(
        'purge.lock',
        'SELECT id FROM meeting WHERE id = ANY($1::uuid[]) AND deleted_at < now() - make_interval(days => $2) FOR UPDATE SKIP LOCKED',
        [rows.map((m) => m.id), afterDays],
      );
      const ids = locked.map((m) => m.id);
      if (!ids.length) return 0;
      // voice samples: removeMeetingVoiceSamples(tx, ids)
      const { rowCount } = await tx.query('purge.delete', 'DELETE FROM meeting WHERE id = ANY($1::uuid[])', [ids]);
      return rowCount ?? 0;
    });
    if (rows.length < batch) break;
  }
  return purged;
}
