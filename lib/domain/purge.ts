// Purge (decisions.md section 6 "Lifecycle"): meetings soft-deleted more than
// MEETING_PURGE_AFTER_DAYS ago are removed by the sweep with their rows (the meeting's cascades),
// their stored objects and their voice samples, in bounded batches. Objects go first and the
// rows last: until its row is gone a meeting is still found here, so a pass cut short anywhere
// is finished by the next one (deleting objects is idempotent), and no object is ever left
// without the row that leads to it. A soft-deleted meeting gets no new objects (uploads, gap
// uploads and takes need a live meeting).
import { changed } from '../event-catalogue';
import type { ObjectStore } from '../storage';
import { inUnitOfWork, type UnitOfWorkDeps } from '../unit-of-work';
import { removeMeetingObjects } from './meeting-objects';
import { removeMeetingVoiceSamples } from './voice-samples';

export const PURGE_BATCH_MEETINGS = 50;
/** Batches per sweep pass: a backlog is worked off over several passes. */
export const PURGE_MAX_BATCHES = 10;

export interface PurgeDeps extends UnitOfWorkDeps {
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
    purged += await inUnitOfWork(deps, async (tx, emit) => {
      // Another sweep purging the same batch skips what this one holds.
      const { rows: locked } = await tx.query<{ id: string }>(
        'purge.lock',
        'SELECT id FROM meeting WHERE id = ANY($1::uuid[]) AND deleted_at < now() - make_interval(days => $2) FOR UPDATE SKIP LOCKED',
        [rows.map((m) => m.id), afterDays],
      );
      const ids = locked.map((m) => m.id);
      if (!ids.length) return 0;
      // Their segments' samples go first: the people's models are recomputed without them.
      const people = await removeMeetingVoiceSamples(tx, ids);
      const { rows: owners } = await tx.query<{ id: string; user_id: string }>('purge.people', 'SELECT id, user_id FROM person WHERE id = ANY($1::uuid[])', [people]);
      for (const p of owners) emit(p.user_id, changed('person', 'updated', p.id, null));
      const { rowCount } = await tx.query('purge.delete', 'DELETE FROM meeting WHERE id = ANY($1::uuid[])', [ids]);
      return rowCount ?? 0;
    });
    if (rows.length < batch) break;
  }
  return purged;
}
