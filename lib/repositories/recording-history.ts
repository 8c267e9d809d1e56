// recording_event_history: the append-only diagnostics trail of a meeting's live recording.
import type { Queryable } from '../db/pool';
import { decodeCursor, toPage, type Page } from '../domain/pagination';

export interface RecordingEvent {
  id: string;
  seq: number;
  meeting_id: string;
  event_type: string;
  payload: Record<string, unknown> | null;
  created_at: string;
}

export async function recordEvent(
  q: Queryable,
  meetingId: string,
  eventType: string,
  payload: Record<string, unknown> | null = null,
): Promise<void> {
  await q.query(
    'recording_event.append',
    'INSERT INTO recording_event_history (meeting_id, event_type, payload) VALUES ($1, $2, $3)',
    [meetingId, eventType, payload ? JSON.stringify(payload) : null],
  );
}

/** Newest first. */
export async function listRecordingEvents(
  q: Queryable,
  meetingId: string,
  f: { limit: number; cursor?: string },
): Promise<Page<RecordingEvent>> {
  const before = decodeCursor(f.cursor, 1);
  const { rows } = await q.query<RecordingEvent>(
    'recording_event.list',
    `SELECT id, seq, meeting_id, event_type, payload, created_at FROM recording_event_history
     WHERE meeting_id = $1 AND ($2::bigint IS NULL OR seq < $2) ORDER BY seq DESC LIMIT $3`,
    [meetingId, before?.[0] ?? null, f.limit + 1],
  );
  return toPage(rows, f.limit, (e) => [e.seq]);
}
