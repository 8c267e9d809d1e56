// POST and DELETE /meetings/{id}/speaker-labels: assigns a meeting's speaker label to a person
// (or removes the assignment), relabels every matching segment and keeps the voice samples and
// models in step, all in the caller's transaction; PATCH /transcript-segments/{id} moves one
// segment to another label. (speaker-label-reapply.ts re-applies stored assignments to new segments;
// speaker-label-list.ts lists the labels with suggestions.)
import type { Queryable } from '../db/pool';
import { notFound, unprocessable } from '../errors';
import { getMeeting } from './meetings';
import { lockSpeakerIdentity, survivingPeople } from './people';
import { syncVoiceSamples } from './voice-samples';

/**
 * Returns how many segments of the meeting carry the label (all now attributed to the person)
 * and the people whose voice model changed: the person, and anyone the label's samples moved
 * away from. Every relabelled segment with a usable embedding becomes a sample of the person
 * (voice-samples.ts); repeating an assignment changes nothing.
 */
export async function assignSpeakerLabel(
  tx: Queryable,
  userId: string,
  meetingId: string,
  speakerLabel: string,
  namedPersonId: string,
): Promise<{ updated_count: number; people: string[] }> {
  // The speaker-identity lock before the meeting's rows orders this and a merge.
  // guard: assign-speaker-identity-lock | remove: await lockSpeakerIdentity(tx, userId); | test: test/concurrency/speaker-identity.test.ts :: should not deadlock when a merge and an assignment
  await lockSpeakerIdentity(tx, userId);
  // guard: assign-label-meeting-lock | remove: , { forUpdate: true } | test: test/concurrency/row-locks.test.ts :: assigning a speaker label of a meeting
  if (!(await getMeeting(tx, { userId }, meetingId, { forUpdate: true }))) throw notFound('meeting');
  // Segment writers hold their transcription row (FOR UPDATE) until they commit, and re-apply
  // stored assignments before that. Waiting for those rows here means a concurrent append either
  // committed first (our relabel sees its segments) or starts after us (it sees our assignment).
  // guard: assign-label-transcriptions-lock | remove: FOR SHARE | test: test/concurrency/speaker-identity.test.ts :: commits while its label is being assigned
  await tx.query('speaker_label.lock_transcriptions', 'SELECT 1 FROM transcription WHERE meeting_id = $1 FOR SHARE', [
    meetingId,
  ]);
  // A person merged into another stands for that one (422 when not the user's person).
  const personId = (await survivingPeople(tx, userId, [namedPersonId])).get(namedPersonId)!;

  const { rows } = await tx.query<{ matched: number }>(
    'speaker_label.matched',
    `SELECT count(*)::int AS matched FROM transcript_segment s JOIN transcription t ON t.id = s.transcription_id
     WHERE t.meeting_id = $1 AND s.speaker_label = $2`,
    [meetingId, speakerLabel],
  );
  const matched = rows[0].matched;
  if (matched === 0) {
    throw labelMissing();
  }
  await tx.query(
    'speaker_label.relabel',
    `UPDATE transcript_segment s SET person_id = $3 FROM transcription t
     WHERE t.id = s.transcription_id AND t.meeting_id = $1 AND s.speaker_label = $2 AND s.person_id IS DISTINCT FROM $3`,
    [meetingId, speakerLabel, personId],
  );
  await tx.query(
    'speaker_label.upsert',
    `INSERT INTO meeting_speaker_label (meeting_id, speaker_label, person_id) VALUES ($1, $2, $3)
     ON CONFLICT (meeting_id, speaker_label) DO UPDATE SET person_id = EXCLUDED.person_id, updated_at = now()`,
    [meetingId, speakerLabel, personId],
  );
  const people = await syncVoiceSamples(tx, { meetingId, speakerLabel });
  return { updated_count: matched, people: [...new Set([personId, ...people])] };
}

/**
 * DELETE /meetings/{id}/speaker-labels/{speaker_label}: removes the assignment, clears person_id
 * on the meeting's segments of that label and removes their voice samples (the person's model is
 * recounted). Null when the meeting has no such assignment. Returns the people whose model changed
 * (the assigned person always, so clients refetch it).
 */
export async function unassignSpeakerLabel(
  tx: Queryable,
  userId: string,
  meetingId: string,
  speakerLabel: string,
): Promise<{ person_id: string; people: string[] } | null> {
  // guard: unassign-speaker-identity-lock | remove: await lockSpeakerIdentity(tx, userId); | test: test/concurrency/speaker-identity.test.ts :: a label's unassignment wait
  await lockSpeakerIdentity(tx, userId);
  // guard: unassign-label-meeting-lock | remove: , { forUpdate: true } | test: test/concurrency/row-locks.test.ts :: removing a speaker assignment of a meeting
  if (!(await getMeeting(tx, { userId }, meetingId, { forUpdate: true }))) throw notFound('meeting');
  // As in assignSpeakerLabel: a concurrent append's segments are cleared too, or see no assignment.
  // guard: unassign-label-transcriptions-lock | remove: FOR SHARE | test: test/concurrency/speaker-identity.test.ts :: assignment is being removed
  await tx.query('speaker_label.lock_transcriptions', 'SELECT 1 FROM transcription WHERE meeting_id = $1 FOR SHARE', [
    meetingId,
  ]);
  const { rows } = await tx.query<{ person_id: string }>(
    'speaker_label.delete',
    'DELETE FROM meeting_speaker_label WHERE meeting_id = $1 AND speaker_label = $2 RETURNING person_id',
    [meetingId, speakerLabel],
  );
  if (!rows[0]) return null;
  await tx.query(
    'speaker_label.clear',
    `UPDATE transcript_segment s SET person_id = NULL FROM transcription t
     WHERE t.id = s.transcription_id AND t.meeting_id = $1 AND s.speaker_label = $2 AND s.person_id IS NOT NULL`,
    [meetingId, speakerLabel],
  );
  const people = await syncVoiceSamples(tx, { meetingId, speakerLabel });
  return { person_id: rows[0].person_id, people: [...new Set([rows[0].person_id, ...people])] };
}

const labelMissing = () =>
  unprocessable("speaker_label not found in this meeting's transcript", [
    { path: 'speaker_label', message: 'no segment of the meeting has this label' },
  ]);

/**
 * PATCH /transcript-segments/{id} with speaker_label: the segment moves to that label of its
 * meeting and takes the person assigned to it (none when unassigned); its voice sample follows
 * the person. 404 when the segment is not the user's, 422 when no segment of the meeting has the
 * label. Returns the people whose voice model changed. The caller holds the user's speaker-identity
 * lock (lockSpeakerIdentity), taken before its first row lock as every identity change takes it.
 */
export async function moveSegmentToLabel(
  tx: Queryable,
  userId: string,
  segmentId: string,
  speakerLabel: string,
): Promise<string[]> {
  // guard: segment-relabel-lock | remove: FOR UPDATE OF s | test: test/concurrency/row-locks.test.ts :: moving a segment to another speaker
  const { rows } = await tx.query<{ transcription_id: string; meeting_id: string }>(
    'segment.lock_for_label',
    `SELECT s.transcription_id, t.meeting_id FROM transcript_segment s JOIN transcription t ON t.id = s.transcription_id
     JOIN meeting m ON m.id = t.meeting_id
     WHERE s.id = $1 AND m.user_id = $2 AND m.deleted_at IS NULL FOR UPDATE OF s`,
    [segmentId, userId],
  );
  if (!rows[0]) throw notFound('segment');
  const { transcription_id: transcriptionId, meeting_id: meetingId } = rows[0];
  const { rowCount } = await tx.query(
    'segment.relabel',
    `UPDATE transcript_segment s SET speaker_label = $3,
       person_id = (SELECT person_id FROM meeting_speaker_label WHERE meeting_id = $2 AND speaker_label = $3)
     WHERE s.id = $1 AND EXISTS (
       SELECT 1 FROM transcript_segment o JOIN transcription t ON t.id = o.transcription_id
       WHERE t.meeting_id = $2 AND o.speaker_label = $3)`,
    [segmentId, meetingId, speakerLabel],
  );
  if (!rowCount) throw labelMissing();
  return syncVoiceSamples(tx, { transcriptionId, segmentIds: [segmentId] });
}
