// meeting_audio_file: where a meeting's playable audio lives in object storage (an upload, or
// the composed audio of its latest finalized recording take).
import type { Queryable } from '../db/pool';

export interface AudioFile {
  meeting_id: string;
  storage_path: string;
  created_at: string;
}

export async function getAudioFile(q: Queryable, meetingId: string): Promise<AudioFile | null> {
  const { rows } = await q.query<AudioFile>(
    'audio_file.get',
    'SELECT meeting_id, storage_path, created_at FROM meeting_audio_file WHERE meeting_id = $1',
    [meetingId],
  );
  return rows[0] ?? null;
}

/** Sets the meeting's audio; returns the path it replaced (null when it had none). */
export async function setAudioFile(
  q: Queryable,
  meetingId: string,
  storagePath: string,
): Promise<{ file: AudioFile; previous: string | null }> {
  // The meeting row, not the file row, is locked: a first upload has no file row to lock. Uploads
  // of a meeting run one at a time; the second finds the first's batch pass (use-cases/audio.ts).
  // no guard: the upsert below waits for the same row (or key) too, so the pass check after it
  // holds without this lock (guard upload-one-pass); the lock makes the order plain.
  await q.query('audio_file.lock', 'SELECT 1 FROM meeting WHERE id = $1 FOR UPDATE', [meetingId]);
  const { rows: before } = await q.query<{ storage_path: string }>(
    'audio_file.previous',
    'SELECT storage_path FROM meeting_audio_file WHERE meeting_id = $1',
    [meetingId],
  );
  const { rows } = await q.query<AudioFile>(
    'audio_file.upsert',
    `INSERT INTO meeting_audio_file (meeting_id, storage_path) VALUES ($1, $2)
     ON CONFLICT (meeting_id) DO UPDATE SET storage_path = EXCLUDED.storage_path, created_at = now()
     RETURNING meeting_id, storage_path, created_at`,
    [meetingId, storagePath],
  );
  return { file: rows[0], previous: before[0]?.storage_path ?? null };
}

/** The meeting's batch pass still to finish (pending, transcribing or synthesizing), or null. */
export async function unfinishedPass(q: Queryable, meetingId: string): Promise<{ id: string; status: string } | null> {
  const { rows } = await q.query<{ id: string; status: string }>(
    'audio_file.unfinished_pass',
    `SELECT id, status FROM transcription
     WHERE meeting_id = $1 AND status IN ('pending', 'transcribing', 'synthesizing') LIMIT 1`,
    [meetingId],
  );
  return rows[0] ?? null;
}

/** The uploaded file a transcription transcribes: its upload meeting's audio (null: not an upload's). */
export async function uploadOfTranscription(
  q: Queryable,
  transcriptionId: string,
): Promise<{ meeting_id: string; storage_path: string } | null> {
  const { rows } = await q.query<{ meeting_id: string; storage_path: string }>(
    'audio_file.of_transcription',
    `SELECT f.meeting_id, f.storage_path FROM transcription t
     JOIN meeting m ON m.id = t.meeting_id AND m.source_type = 'upload'
     JOIN meeting_audio_file f ON f.meeting_id = t.meeting_id
     WHERE t.id = $1`,
    [transcriptionId],
  );
  return rows[0] ?? null;
}

/** Upload transcriptions left pending (not offered) for `minAgeSeconds`: their offer died between its steps. */
export async function unofferedUploads(
  q: Queryable,
  minAgeSeconds: number,
  limit: number,
): Promise<{ id: string; meeting_id: string; storage_path: string }[]> {
  const { rows } = await q.query<{ id: string; meeting_id: string; storage_path: string }>(
    'audio_file.unoffered',
    `SELECT t.id, t.meeting_id, f.storage_path FROM transcription t
     JOIN meeting m ON m.id = t.meeting_id AND m.source_type = 'upload' AND m.deleted_at IS NULL
     JOIN meeting_audio_file f ON f.meeting_id = t.meeting_id
     WHERE t.status = 'pending' AND t.updated_at <= now() - make_interval(secs => $1)
     ORDER BY t.updated_at LIMIT $2`,
    [minAgeSeconds, limit],
  );
  return rows;
}
