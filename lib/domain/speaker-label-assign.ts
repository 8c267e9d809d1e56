// POST /meetings/{id}/speaker-labels: assigns a meeting's speaker label to a person,
// relabels every matching segment and refines the person's voice model, all in the caller's
// transaction. (speaker-labels.ts re-applies stored assignments to new segments.)
import pgvector from 'pgvector';
import type { Queryable } from '../db/pool';
import { notFound, unprocessable } from '../errors';
import { getMeeting } from './meetings';
import { refineVoice } from './voice';

export interface LabelAssignment {
  meeting_id: string;
  speaker_label: string;
  person_id: string;
  created_at: Date;
  updated_at: Date;
}

const CONTRIBUTES = 's.person_id IS DISTINCT FROM $3 AND s.feature_vector IS NOT NULL AND vector_norm(s.feature_vector) > 0';

interface Contributions {
  matched: number;
  contributing: number;
  batch_mean: string | null;
}

/**
 * Returns how many segments of the meeting carry the label (all now attributed to the person).
 * A segment's embedding contributes when the segment is newly attributed to this person, so
 * repeating an assignment does not count the same embeddings twice; segments without a
 * feature_vector (or a zero one) are relabelled but do not contribute.
 */
export async function assignSpeakerLabel(
  tx: Queryable,
  userId: string,
  meetingId: string,
  speakerLabel: string,
  personId: string,
): Promise<{ updated_count: number }> {
  if (!(await getMeeting(tx, { userId }, meetingId, { forUpdate: true }))) throw notFound('meeting');
  // Segment writers hold their transcription row (FOR UPDATE) until they commit, and re-apply
  // stored assignments before that. Waiting for those rows here means a concurrent append either
  // committed first (our relabel sees its segments) or starts after us (it sees our assignment).
  await tx.query('speaker_label.lock_transcriptions', 'SELECT 1 FROM transcription WHERE meeting_id = $1 FOR SHARE', [meetingId]);
  const { rows: people } = await tx.query<{ voice_vector: string | null; voice_sample_count: number }>(
    'speaker_label.person',
    'SELECT voice_vector::text AS voice_vector, voice_sample_count FROM person WHERE id = $1 AND user_id = $2 FOR UPDATE',
    [personId, userId],
  );
  const person = people[0];
  if (!person) throw unprocessable('person_id does not exist', [{ path: 'person_id', message: 'person does not exist' }]);

  // Read before relabelling: a segment contributes only when newly attributed to the person.
  // avg, not sum: pgvector sums in float4 but averages in float8, which 10,000 rows need.
  const { rows } = await tx.query<Contributions>(
    'speaker_label.contributions',
    `SELECT count(*)::int AS matched,
            count(*) FILTER (WHERE ${CONTRIBUTES})::int AS contributing,
            avg(l2_normalize(s.feature_vector)) FILTER (WHERE ${CONTRIBUTES})::text AS batch_mean
     FROM transcript_segment s JOIN transcription t ON t.id = s.transcription_id
     WHERE t.meeting_id = $1 AND s.speaker_label = $2`,
    [meetingId, speakerLabel, personId],
  );
  const r = rows[0];
  if (r.matched === 0) {
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

  const prev = { vector: person.voice_vector === null ? null : (pgvector.fromSql(person.voice_vector) as number[]), sample_count: person.voice_sample_count };
  const batchSum = r.batch_mean === null ? null : (pgvector.fromSql(r.batch_mean) as number[]).map((x) => x * r.contributing);
  const model = batchSum === null ? null : refineVoice(prev, batchSum, r.contributing);
  if (model) {
    await tx.query(
      'speaker_label.refine_voice',
      `UPDATE person SET voice_vector = $2, voice_sample_count = $3, voice_confidence = $4, voice_model_status = 'ready', updated_at = now()
       WHERE id = $1`,
      [personId, pgvector.toSql(model.vector), model.sample_count, model.confidence],
    );
  }
  return { updated_count: r.matched };
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
