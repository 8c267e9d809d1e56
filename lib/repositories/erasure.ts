// Account erasure (DELETE /me, decisions.md section 6 "Lifecycle"). Three idempotent steps, so a
// request cut short anywhere is finished by the sweep (resumeErasures, lib/use-cases/account.ts; the SQL of each step is here):
//  1. request: an account_erasure row, and the user's open takes stopped in the same transaction
//     (the live instance owning one sees at its next write or owner heartbeat that the take is not
//     recording any more, or gone, and lets go; nothing is stored for it after that),
//  2. rows, in bounded batches: the user's meetings (and their cascades, and the service's
//     idempotency records of requests on them), their ids recorded in the request in the same
//     transaction; last the user's idempotency records and the user row (its
//     cascades: people, tasks, notes, threads, tags, outbox events, event sequence),
//  3. objects: everything under each recorded meeting's prefixes, meeting by meeting; then the
//     request row itself, so a finished erasure leaves no row naming the user.
// Rows go before objects: a live writer that stores a segment once its take is gone finds no
// take to commit to and deletes its own object (run-services/live/group-commit.ts).
import { removeMeetingVoiceSamples } from './voice-samples';
import type { Queryable } from '../db/pool';
import { recordEvent } from './recording-history';
import { CAPTURE_OPEN } from './recordings';

/** Meetings deleted per row transaction: bounds a transaction of a user with much data. */
export const ERASURE_MEETING_BATCH = 50;

/** Step 1: records the request (again: kept as it is) and stops the user's open takes. */
export async function requestErasure(tx: Queryable, userId: string): Promise<{ stoppedTakes: number }> {
  await tx.query(
    'erasure.request',
    'INSERT INTO account_erasure (user_id) VALUES ($1) ON CONFLICT (user_id) DO UPDATE SET updated_at = now()',
    [userId],
  );
  // Stopped the way the sweep stops an orphaned take, with the gap window closed at once: the
  // take is about to be deleted, and nothing may finalize it meanwhile (finalize.dueTakes skips
  // takes of an account being erased).
  const { rows } = await tx.query<{ meeting_id: string; audio_version: number }>(
    'erasure.stop_takes',
    `UPDATE recording r SET state = 'stopped', stop_reason = COALESCE(r.stop_reason, 'user'), stopped_at = now(),
       gap_upload_deadline = now(), owner_instance = NULL, updated_at = now()
     FROM meeting m WHERE m.id = r.meeting_id AND m.user_id = $1 AND r.state = ANY($2)
     RETURNING r.meeting_id, r.audio_version`,
    [userId, CAPTURE_OPEN],
  );
  for (const t of rows)
    await recordEvent(tx, t.meeting_id, 'recording_stopped', {
      audio_version: t.audio_version,
      reason: 'user',
      by: 'account_erasure',
    });
  return { stoppedTakes: rows.length };
}

/** The users among these whose account is erased or being erased (DELETE /me). */
export async function erasedUsers(q: Queryable, userIds: string[]): Promise<string[]> {
  const { rows } = await q.query<{ id: string }>(
    'erasure.erased_users',
    `SELECT u.id FROM unnest($1::uuid[]) AS u(id)
     WHERE NOT EXISTS (SELECT 1 FROM app_user a WHERE a.id = u.id) OR EXISTS (SELECT 1 FROM account_erasure e WHERE e.user_id = u.id)`,
    [userIds],
  );
  return rows.map((r) => r.id);
}

/**
 * Step 2, one batch: deletes up to ERASURE_MEETING_BATCH meetings of the user, or, when none is
 * left, the user's other rows. 'done' once the user's rows are gone (or the erasure finished).
 */
export async function eraseRowBatch(tx: Queryable, userId: string): Promise<'more' | 'done'> {
  // Orders concurrent runners of one erasure (the request and the sweep); no guard: the user
  // row's lock below serializes their batches, and each statement after it re-reads what it needs.
  const { rows: req } = await tx.query<{ rows_erased_at: Date | null }>(
    'erasure.lock',
    'SELECT rows_erased_at FROM account_erasure WHERE user_id = $1 FOR UPDATE',
    [userId],
  );
  if (!req[0] || req[0].rows_erased_at) return 'done';
  // The user row locked first: a concurrent insert referencing the user (a new meeting) waits,
  // then fails, so no meeting escapes the ids recorded below.
  // guard: erasure-user-lock | remove: FOR UPDATE | test: test/concurrency/erasure.test.ts :: committed while a row batch waits
  await tx.query('erasure.lock_user', 'SELECT id FROM app_user WHERE id = $1 FOR UPDATE', [userId]);
  const { rows: meetings } = await tx.query<{ id: string }>(
    'erasure.meetings',
    'SELECT id FROM meeting WHERE user_id = $1 ORDER BY id LIMIT $2',
    [userId, ERASURE_MEETING_BATCH],
  );
  const ids = meetings.map((m) => m.id);
  if (ids.length) {
    // The user's people go with the account; their models need no recount, but the samples'
    // removal is the one way samples leave (and keeps running sums exact if a person stays).
    await removeMeetingVoiceSamples(tx, ids);
    // The ML service's idempotent segment appends name a transcription of these meetings.
    await tx.query(
      'erasure.service_idempotency_transcriptions',
      `DELETE FROM idempotency_record WHERE principal = 'service' AND path LIKE '/transcriptions/%'
         AND split_part(path, '/', 3) IN (SELECT id::text FROM transcription WHERE meeting_id = ANY($1::uuid[]))`,
      [ids],
    );
    await tx.query('erasure.delete_meetings', 'DELETE FROM meeting WHERE id = ANY($1::uuid[])', [ids]);
    // The ML service's idempotent writes on these meetings keep their answers (the user's data) for 24 h.
    await tx.query(
      'erasure.service_idempotency',
      `DELETE FROM idempotency_record WHERE principal = 'service' AND path LIKE '/meetings/%' AND split_part(path, '/', 3) = ANY($1::text[])`,
      [ids],
    );
    await tx.query(
      'erasure.note_meetings',
      'UPDATE account_erasure SET meeting_ids = meeting_ids || $2::uuid[], updated_at = now() WHERE user_id = $1',
      [userId, ids],
    );
    if (ids.length === ERASURE_MEETING_BATCH) return 'more';
  }
  await tx.query('erasure.idempotency', 'DELETE FROM idempotency_record WHERE principal = $1', [userId]);
  await tx.query('erasure.user', 'DELETE FROM app_user WHERE id = $1', [userId]);
  await tx.query(
    'erasure.rows_erased',
    'UPDATE account_erasure SET rows_erased_at = now(), updated_at = now() WHERE user_id = $1',
    [userId],
  );
  return 'done';
}

/** The meetings whose objects an erasure still has to delete; null when no erasure of the user is pending. */
export async function erasureMeetings(q: Queryable, userId: string): Promise<string[] | null> {
  const { rows } = await q.query<{ meeting_ids: string[] }>(
    'erasure.get',
    'SELECT meeting_ids FROM account_erasure WHERE user_id = $1',
    [userId],
  );
  return rows[0]?.meeting_ids ?? null;
}

/** A meeting's objects are gone: the erasure no longer names it. */
export async function meetingObjectsErased(q: Queryable, userId: string, meetingId: string): Promise<void> {
  await q.query(
    'erasure.objects_removed',
    'UPDATE account_erasure SET meeting_ids = array_remove(meeting_ids, $2::uuid), updated_at = now() WHERE user_id = $1',
    [userId, meetingId],
  );
}

/** The erasure is finished once its rows and objects are gone: its own row goes last. */
export async function finishErasure(q: Queryable, userId: string): Promise<void> {
  await q.query(
    'erasure.finish',
    `DELETE FROM account_erasure WHERE user_id = $1 AND rows_erased_at IS NOT NULL AND meeting_ids = '{}'`,
    [userId],
  );
}

/** Erasures untouched for minAgeMs (a live request is still working on its own), oldest first. */
export async function erasuresDue(q: Queryable, minAgeMs: number, limit: number): Promise<string[]> {
  const { rows } = await q.query<{ user_id: string }>(
    'erasure.due',
    'SELECT user_id FROM account_erasure WHERE updated_at <= now() - make_interval(secs => $1::double precision / 1000) ORDER BY updated_at LIMIT $2',
    [minAgeMs, limit],
  );
  return rows.map((r) => r.user_id);
}
