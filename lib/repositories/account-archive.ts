// What an account export holds (docs/exports.md, docs/account-export.schema.json): each record
// as its row, less what only the service uses (search vectors, embeddings, running sums, secrets,
// leases). Records the user deleted (soft-deleted, awaiting purge) are left out, as the API does.
// Read per file (the account-level lists) and per meeting, so the builder holds one meeting's
// rows at a time.
import type { Queryable } from '../db/pool';
import type { Recording } from './recordings';

type Json = Record<string, unknown>;

async function one(q: Queryable, name: string, sql: string, params: unknown[]): Promise<Json | null> {
  const { rows } = await q.query<{ doc: Json | null }>(name, sql, params);
  return rows[0]?.doc ?? null;
}
async function many(q: Queryable, name: string, sql: string, params: unknown[]): Promise<Json[]> {
  const { rows } = await q.query<{ doc: Json }>(name, sql, params);
  return rows.map((r) => r.doc);
}

/** account.json: the user and their webhooks (without secrets). */
export async function accountDoc(q: Queryable, userId: string): Promise<Json> {
  const user = await one(q, 'archive.user', 'SELECT to_jsonb(u) AS doc FROM app_user u WHERE id = $1', [userId]);
  const webhooks = await many(
    q,
    'archive.webhooks',
    `SELECT to_jsonb(w) - ARRAY['user_id', 'secret', 'cursor_seq', 'lease_until'] AS doc
     FROM webhook w WHERE user_id = $1 ORDER BY created_at, id`,
    [userId],
  );
  return { user, webhooks };
}

/** people.json: each person with the summaries written about them. */
export const peopleDoc = (q: Queryable, userId: string) =>
  many(
    q,
    'archive.people',
    `SELECT to_jsonb(p) - ARRAY['user_id', 'voice_vector', 'voice_sum', 'voice_sample_count'] || jsonb_build_object(
       'summaries', COALESCE((SELECT jsonb_agg(to_jsonb(s) - 'person_id' ORDER BY s.created_at, s.id)
                              FROM person_summary s WHERE s.person_id = p.id), '[]'::jsonb)) AS doc
     FROM person p WHERE user_id = $1 ORDER BY created_at, id`,
    [userId],
  );

export const tagsDoc = (q: Queryable, userId: string) =>
  many(
    q,
    'archive.tags',
    `SELECT to_jsonb(t) - 'user_id' AS doc FROM tag t WHERE user_id = $1 ORDER BY created_at, id`,
    [userId],
  );

/** tasks.json: each task with its sub-tasks (legacy rows) nested. */
export const tasksDoc = (q: Queryable, userId: string) =>
  many(
    q,
    'archive.tasks',
    `SELECT to_jsonb(t) - 'user_id' || jsonb_build_object(
       'sub_tasks', COALESCE((SELECT jsonb_agg(to_jsonb(s) - 'task_id' ORDER BY s.created_at, s.id)
                              FROM sub_task s WHERE s.task_id = t.id), '[]'::jsonb)) AS doc
     FROM task t WHERE user_id = $1 AND deleted_at IS NULL ORDER BY created_at, id`,
    [userId],
  );

export const notesDoc = (q: Queryable, userId: string) =>
  many(
    q,
    'archive.notes',
    `SELECT to_jsonb(n) - ARRAY['user_id', 'content_search'] AS doc FROM note n WHERE user_id = $1 ORDER BY created_at, id`,
    [userId],
  );

/** threads.json: each thread with its messages, oldest first. */
export const threadsDoc = (q: Queryable, userId: string) =>
  many(
    q,
    'archive.threads',
    `SELECT to_jsonb(t) - ARRAY['user_id', 'deleted_at'] || jsonb_build_object(
       'messages', COALESCE((SELECT jsonb_agg(to_jsonb(m) - ARRAY['thread_id', 'deleted_at'] ORDER BY m.created_at, m.id)
                             FROM chat_message m WHERE m.thread_id = t.id AND m.deleted_at IS NULL), '[]'::jsonb)) AS doc
     FROM ai_thread t WHERE user_id = $1 AND deleted_at IS NULL ORDER BY created_at, id`,
    [userId],
  );

/** The user's meetings, oldest first. */
export async function archiveMeetingIds(q: Queryable, userId: string): Promise<string[]> {
  const { rows } = await q.query<{ id: string }>(
    'archive.meetings',
    'SELECT id FROM meeting WHERE user_id = $1 AND deleted_at IS NULL ORDER BY start_time, id',
    [userId],
  );
  return rows.map((r) => r.id);
}

/**
 * meeting.json: the meeting (its synthesis: summary, key_points, headline, topics), attendees,
 * speaker labels, talking points, transcriptions with their status history, takes with the
 * recording history. Null when the meeting went meanwhile.
 */
export const meetingDoc = (q: Queryable, userId: string, meetingId: string) =>
  one(
    q,
    'archive.meeting',
    `SELECT to_jsonb(m) - ARRAY['user_id', 'title_search', 'deleted_at'] || jsonb_build_object(
       'attendees', COALESCE((SELECT jsonb_agg(a.person_id ORDER BY a.person_id) FROM meeting_attendee a WHERE a.meeting_id = m.id), '[]'::jsonb),
       'speaker_labels', COALESCE((SELECT jsonb_agg(to_jsonb(l) - 'meeting_id' ORDER BY l.speaker_label)
                                   FROM meeting_speaker_label l WHERE l.meeting_id = m.id), '[]'::jsonb),
       'topics', COALESCE((SELECT jsonb_agg(to_jsonb(t) - 'meeting_id' || jsonb_build_object(
                             'segment_ids', COALESCE((SELECT jsonb_agg(ts.segment_id ORDER BY ts.created_at, ts.id)
                                                      FROM topic_segment ts WHERE ts.topic_id = t.id), '[]'::jsonb))
                           ORDER BY t.created_at, t.id) FROM topic t WHERE t.meeting_id = m.id), '[]'::jsonb),
       'talking_points', COALESCE((SELECT jsonb_agg(to_jsonb(p) - ARRAY['meeting_id', 'content_search', 'deleted_at'] ORDER BY p.created_at, p.id)
                                   FROM talking_point p WHERE p.meeting_id = m.id AND p.deleted_at IS NULL), '[]'::jsonb),
       'transcriptions', COALESCE((SELECT jsonb_agg(to_jsonb(t) - 'meeting_id' || jsonb_build_object(
                                     'history', COALESCE((SELECT jsonb_agg(to_jsonb(h) - 'transcription_id' ORDER BY h.created_at, h.id)
                                                          FROM transcription_status_history h WHERE h.transcription_id = t.id), '[]'::jsonb))
                                   ORDER BY t.created_at, t.id) FROM transcription t WHERE t.meeting_id = m.id), '[]'::jsonb),
       'takes', COALESCE((SELECT jsonb_agg(to_jsonb(r) - ARRAY['meeting_id', 'owner_instance', 'trace_context'] ORDER BY r.audio_version)
                          FROM recording r WHERE r.meeting_id = m.id), '[]'::jsonb),
       'recording_history', COALESCE((SELECT jsonb_agg(to_jsonb(h) - ARRAY['meeting_id', 'id'] ORDER BY h.seq)
                                      FROM recording_event_history h WHERE h.meeting_id = m.id), '[]'::jsonb)
     ) AS doc
     FROM meeting m WHERE m.id = $1 AND m.user_id = $2 AND m.deleted_at IS NULL`,
    [meetingId, userId],
  );

/** The meeting's transcription the archive's transcript files hold: the newest one. */
export async function latestTranscriptionId(q: Queryable, meetingId: string): Promise<string | null> {
  const { rows } = await q.query<{ id: string }>(
    'archive.transcription',
    'SELECT id FROM transcription WHERE meeting_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1',
    [meetingId],
  );
  return rows[0]?.id ?? null;
}

/** The meeting's takes (their audio is the archive's audio/v{n} files). */
export async function meetingTakes(q: Queryable, meetingId: string): Promise<Recording[]> {
  const { rows } = await q.query<Recording>(
    'archive.takes',
    'SELECT * FROM recording WHERE meeting_id = $1 ORDER BY audio_version',
    [meetingId],
  );
  return rows;
}

/** The uploaded audio of an upload meeting (an object under uploads/), if any. */
export async function uploadedAudioPath(q: Queryable, meetingId: string): Promise<string | null> {
  const { rows } = await q.query<{ storage_path: string }>(
    'archive.upload',
    `SELECT storage_path FROM meeting_audio_file WHERE meeting_id = $1 AND storage_path LIKE 'uploads/%'`,
    [meetingId],
  );
  return rows[0]?.storage_path ?? null;
}
