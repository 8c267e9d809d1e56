// GET /meetings/{id}/speaker-labels (decisions.md section 7, "People and speakers"): every speaker
// label of the meeting's segments, assigned or not, and for an unassigned one the user's people
// whose voice is closest to it (the voice-match search of voice.ts: HNSW walk, exact fallback).
import pgvector from 'pgvector';
import type { Database } from '../db/pool';
import { findVoiceMatchesEach, type VoiceSearchSettings } from './voice';

/** At most this many suggestions per unassigned label. */
export const MAX_SUGGESTIONS = 3;

export interface SpeakerSuggestion {
  person_id: string;
  display_name: string;
  similarity: number;
}

export interface SpeakerLabel {
  meeting_id: string;
  speaker_label: string;
  /** The assigned person; null when unassigned. */
  person_id: string | null;
  segment_count: number;
  /** Of the assignment (null when unassigned). */
  created_at: string | null;
  updated_at: string | null;
  /** Unassigned labels only: best first; [] when none qualifies or the label has no embeddings. */
  suggestions: SpeakerSuggestion[];
}

const round6 = (x: number) => Math.round(x * 1e6) / 1e6;

export interface SuggestionSettings extends VoiceSearchSettings {
  minSimilarity: number;
}

/**
 * The meeting's labels by name (the caller has checked the meeting is visible). A label's voice is
 * the mean of its segments' L2-normalised embeddings; people at least `minSimilarity` similar to
 * it are suggested.
 */
export async function listSpeakerLabels(
  db: Database,
  userId: string,
  meetingId: string,
  settings: SuggestionSettings,
): Promise<SpeakerLabel[]> {
  const { rows } = await db.query<Omit<SpeakerLabel, 'meeting_id' | 'suggestions'> & { voice: string | null }>(
    'speaker_label.list_all',
    `SELECT s.speaker_label, l.person_id, count(*)::int AS segment_count, l.created_at, l.updated_at,
       CASE WHEN l.person_id IS NULL THEN
         avg(l2_normalize(s.feature_vector)) FILTER (WHERE vector_norm(s.feature_vector) > 0)::text END AS voice
     FROM transcript_segment s JOIN transcription t ON t.id = s.transcription_id
     LEFT JOIN meeting_speaker_label l ON l.meeting_id = t.meeting_id AND l.speaker_label = s.speaker_label
     WHERE t.meeting_id = $1 AND s.speaker_label IS NOT NULL
     GROUP BY s.speaker_label, l.person_id, l.created_at, l.updated_at
     ORDER BY s.speaker_label`,
    [meetingId],
  );
  // Embeddings that cancel out leave no direction to compare.
  const voices = rows.map((r) => {
    const v = r.voice ? (pgvector.fromSql(r.voice) as number[]) : null;
    return v?.some((x) => x !== 0) ? v : null;
  });
  const searched = voices.filter((v): v is number[] => v !== null);
  const matches = searched.length ? await findVoiceMatchesEach(db, userId, searched, MAX_SUGGESTIONS, settings) : [];
  let next = 0;
  return rows.map(({ voice: _v, ...label }, i) => ({
    meeting_id: meetingId,
    ...label,
    suggestions: voices[i]
      ? matches[next++]
          .filter((m) => m.similarity >= settings.minSimilarity)
          .map((m) => ({
            person_id: m.person.id,
            display_name: m.person.display_name,
            similarity: round6(m.similarity),
          }))
      : [],
  }));
}
