// Meetings repository: every query tenant-scoped through the Actor; soft-deleted rows hidden.
import { jsonParam, patchSet } from '../db/params';
import type { Queryable } from '../db/pool';
import type { Actor } from '../domain/actor';
import { decodeIdCursor, toPage, type Page } from '../domain/pagination';

export type SourceType = 'recording' | 'upload' | 'text' | 'anecdotal';

export interface Meeting {
  id: string;
  user_id: string;
  title: string;
  source_type: SourceType;
  start_time: string;
  end_time: string | null;
  summary: string | null;
  key_points: unknown;
  headline: string | null;
  deleted_at: string | null;
  created_at: string;
}

export interface MeetingInput {
  title: string;
  source_type: SourceType;
  start_time?: string;
  end_time?: string | null;
  summary?: string | null;
  key_points?: unknown;
  headline?: string | null;
}

export type MeetingPatch = Partial<Omit<MeetingInput, 'source_type'>>;

const COLUMNS =
  'id, user_id, title, source_type, start_time, end_time, summary, key_points, headline, deleted_at, created_at';
const PATCHABLE = ['title', 'start_time', 'end_time', 'summary', 'key_points', 'headline'] as const;

export async function createMeeting(q: Queryable, userId: string, input: MeetingInput): Promise<Meeting> {
  const { rows } = await q.query<Meeting>(
    'meeting.create',
    `INSERT INTO meeting (user_id, title, source_type, start_time, end_time, summary, key_points, headline)
     VALUES ($1, $2, $3, COALESCE($4::timestamptz, now()), $5, $6, $7, $8) RETURNING ${COLUMNS}`,
    [
      userId,
      input.title,
      input.source_type,
      input.start_time ?? null,
      input.end_time ?? null,
      input.summary ?? null,
      jsonParam(input.key_points),
      input.headline ?? null,
    ],
  );
  return rows[0];
}

/** The meeting if the actor may see it (not deleted); `forUpdate` locks it for the transaction. */
export async function getMeeting(
  q: Queryable,
  actor: Actor,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<Meeting | null> {
  const { rows } = await q.query<Meeting>(
    'meeting.get',
    `SELECT ${COLUMNS} FROM meeting WHERE id = $1 AND ($2::uuid IS NULL OR user_id = $2) AND deleted_at IS NULL${opts.forUpdate ? ' FOR UPDATE' : ''}`,
    [id, actor.userId],
  );
  return rows[0] ?? null;
}

export interface MeetingFilter {
  limit: number;
  cursor?: string;
  source_type?: SourceType;
  from?: string;
  to?: string;
  q?: string;
}

export async function listMeetings(q: Queryable, userId: string, f: MeetingFilter): Promise<Page<Meeting>> {
  // The cursor holds the last row's id; its exact start_time is read back in SQL (JS dates
  // would drop the microseconds Postgres keeps).
  const after = decodeIdCursor(f.cursor);
  const { rows } = await q.query<Meeting>(
    'meeting.list',
    `SELECT ${COLUMNS} FROM meeting
     WHERE user_id = $1 AND deleted_at IS NULL
       AND ($2::meeting_source_type IS NULL OR source_type = $2)
       AND ($3::timestamptz IS NULL OR start_time >= $3)
       AND ($4::timestamptz IS NULL OR start_time < $4)
       AND ($5::text IS NULL OR title ILIKE '%' || $5 || '%')
       AND ($6::uuid IS NULL OR (start_time, id) < (SELECT c.start_time, c.id FROM meeting c WHERE c.id = $6 AND c.user_id = $1))
     ORDER BY start_time DESC, id DESC LIMIT $7`,
    [userId, f.source_type ?? null, f.from ?? null, f.to ?? null, f.q ?? null, after, f.limit + 1],
  );
  return toPage(rows, f.limit, (m) => [m.id]);
}

export async function updateMeeting(
  q: Queryable,
  actor: Actor,
  id: string,
  patch: MeetingPatch,
): Promise<Meeting | null> {
  const params: unknown[] = [id, actor.userId];
  const set = patchSet(patch, PATCHABLE, params, ['key_points']);
  if (!set) return getMeeting(q, actor, id);
  const { rows } = await q.query<Meeting>(
    'meeting.update',
    `UPDATE meeting SET ${set} WHERE id = $1 AND ($2::uuid IS NULL OR user_id = $2) AND deleted_at IS NULL RETURNING ${COLUMNS}`,
    params,
  );
  return rows[0] ?? null;
}

/** Soft-deletes the meeting and detaches its tasks (they live on without it); the ids of those tasks. */
export async function softDeleteMeeting(
  tx: Queryable,
  actor: Actor,
  id: string,
): Promise<{ meeting: Meeting; detachedTaskIds: string[] } | null> {
  const { rows } = await tx.query<Meeting>(
    'meeting.soft_delete',
    `UPDATE meeting SET deleted_at = now() WHERE id = $1 AND ($2::uuid IS NULL OR user_id = $2) AND deleted_at IS NULL RETURNING ${COLUMNS}`,
    [id, actor.userId],
  );
  if (!rows[0]) return null;
  const tasks = await tx.query<{ id: string }>(
    'task.detach_from_meeting',
    'UPDATE task SET meeting_id = NULL, updated_at = now() WHERE meeting_id = $1 RETURNING id',
    [id],
  );
  return { meeting: rows[0], detachedTaskIds: tasks.rows.map((t) => t.id) };
}
