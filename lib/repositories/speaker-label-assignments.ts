// POST and DELETE /meetings/{id}/speaker-labels: assigns a meeting's speaker label to a person
// (or removes the assignment), relabels every matching segment and keeps the voice samples and
// models in step, all in the caller's transaction. (speaker-labels.ts re-applies stored
// assignments to new segments.)
import type { Queryable } from '../db/pool';
import { notFound, unprocessable } from '../errors';
import { getMeeting } from './meetings';
import { ownsPerson } from './people';
import { syncVoiceSamples } from './voice-samples';

export interface LabelAssignment {
  meeting_id: string;
  speaker_label: string;
  person_id: string;
  created_at: string;
  updated_at: string;
}

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
  personId: string,
): Promise<{ updated_count: number; people: string[] }> {
  if (!(await getMeeting(tx, { userId }, meetingId, { forUpdate: true }))) throw notFound('meeting');
  // Segment writers hold their transcription row (FOR UPDATE) until they commit, and re-apply
  // stored assignments before that. Waiting for those rows here means a concurrent append either
  // committed first (our relabel sees its segments) or starts after us (it sees our assignment).
  await tx.query('speaker_label.lock_transcriptions', 'SELECT 1 FROM transcription WHERE meeting_id = $1 FOR SHARE', [meetingId]);
  if (!(await ownsPerson(tx, userId, personId))) throw unprocessable('person_id does not exist', [{ path: 'person_id', message: 'person does not exist' }]);

  const { rows } = await tx.query<{ matched: number }>(
    'speaker_label.matched',
    `SELECT count(*)::int AS matched FROM transcript_segment s JOIN transcription t ON t.id = s.transcription_id
     WHERE t.meeting_id = $1 AND s.speaker_label = $2`,
    [meetingId, speakerLabel],
  );
  const matched = rows[0].matched;
  if (matched === 0) {
    throw unprocessable("speaker_label not found in this meeting's transcript", [{ path: 'speaker_label', message: 'no segment of the meeting has this label' }]);
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
export async function unassignSpeakerLabel(tx: Queryable, userId: string, meetingId: string, speakerLabel: string): Promise<{ person_id: string; people: string[] } | null> {
  if (!(await getMeeting(tx, { userId }, meetingId, { forUpdate: true }))) throw notFound('meeting');
  await tx.query('speaker_label.lock_transcriptions', 'SELECT 1 FROM transcription WHERE meeting_id = $1 FOR SHARE', [meetingId]);
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

/** The meeting's stored assignments by label (the caller has checked the meeting is visible). */
export async function listLabelAssignments(q: Queryable, meetingId: string): Promise<LabelAssignment[]> {
  const { rows } = await q.query<LabelAssignment>(
    'speaker_label.list',
    'SELECT meeting_id, speaker_label, person_id, created_at, updated_at FROM meeting_speaker_label WHERE meeting_id = $1 ORDER BY speaker_label',
    [meetingId],
  );
  return rows;
}
