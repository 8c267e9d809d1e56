// Speaker-label assignments (meeting_speaker_label) are user-owned and outlive segment
// rebuilds: every append or replace of segments re-applies them in the same transaction.
import type { Queryable } from '../db/pool';

/** Sets person_id on the transcription's segments whose label the meeting has assigned. */
export async function applySpeakerLabels(tx: Queryable, transcriptionId: string): Promise<number> {
  const { rowCount } = await tx.query(
    'speaker_label.apply',
    `UPDATE transcript_segment s SET person_id = l.person_id
     FROM transcription t JOIN meeting_speaker_label l ON l.meeting_id = t.meeting_id
     WHERE t.id = $1 AND s.transcription_id = t.id AND s.speaker_label = l.speaker_label
       AND s.person_id IS DISTINCT FROM l.person_id`,
    [transcriptionId],
  );
  return rowCount ?? 0;
}
