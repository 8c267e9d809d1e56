// Notes repository: every query tenant-scoped through the Actor. Notes have no deleted_at,
// so delete is a hard delete. The subject (a person or meeting) must be the note owner's.
import { jsonParam, patchSet } from '../db/params';
import type { Queryable } from '../db/pool';
import type { Actor } from '../domain/actor';
import { createdKey, decodeCreatedCursor, toCreatedPage, type Page } from '../domain/pagination';
import { assertOwnedRefs, type Ref } from './tasks';

export type SubjectType = 'PERSON' | 'MEETING';

export interface Note {
  id: string;
  user_id: string;
  content: string;
  subject_type: SubjectType | null;
  subject_id: string | null;
  tags: unknown;
  created_at: string;
  updated_at: string;
}

export interface NoteInput {
  content: string;
  subject_type?: SubjectType | null;
  subject_id?: string | null;
  tags?: unknown;
}

export type NotePatch = Partial<NoteInput>;

const COLUMNS = 'id, user_id, content, subject_type, subject_id, tags, created_at, updated_at';

/** The ownership check of a polymorphic PERSON/MEETING reference (notes' subject, threads' context). */
export const subjectRef = (
  field: string,
  type: SubjectType | null | undefined,
  id: string | null | undefined,
): Ref[] => (type && id ? [{ field, kind: type === 'PERSON' ? 'person' : 'meeting', id }] : []);

/** The meeting a note or thread is about, for EntityChanged.meeting_id. */
export const meetingOf = (type: SubjectType | null, id: string | null): string | null =>
  type === 'MEETING' ? id : null;

export async function createNote(q: Queryable, userId: string, input: NoteInput): Promise<Note> {
  await assertOwnedRefs(q, userId, subjectRef('subject_id', input.subject_type, input.subject_id));
  const { rows } = await q.query<Note>(
    'note.create',
    `INSERT INTO note (user_id, content, subject_type, subject_id, tags) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
    [userId, input.content, input.subject_type ?? null, input.subject_id ?? null, jsonParam(input.tags)],
  );
  return rows[0];
}

export async function getNote(
  q: Queryable,
  actor: Actor,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<Note | null> {
  const { rows } = await q.query<Note>(
    'note.get',
    `SELECT ${COLUMNS} FROM note WHERE id = $1 AND ($2::uuid IS NULL OR user_id = $2)${opts.forUpdate ? ' FOR UPDATE' : ''}`,
    [id, actor.userId],
  );
  return rows[0] ?? null;
}

export interface NoteFilter {
  limit: number;
  cursor?: string;
  subject_type?: SubjectType;
  subject_id?: string;
}

/** The user's notes, newest first. */
export async function listNotes(q: Queryable, userId: string, f: NoteFilter): Promise<Page<Note>> {
  const [afterAt, afterId] = decodeCreatedCursor(f.cursor);
  const { rows } = await q.query<Note & { page_key: string }>(
    'note.list',
    `SELECT ${COLUMNS}, ${createdKey()} FROM note
     WHERE user_id = $1
       AND ($2::text IS NULL OR subject_type = $2)
       AND ($3::uuid IS NULL OR subject_id = $3)
       AND ($4::timestamptz IS NULL OR (created_at, id) < ($4::timestamptz, $5::uuid))
     ORDER BY created_at DESC, id DESC LIMIT $6`,
    [userId, f.subject_type ?? null, f.subject_id ?? null, afterAt, afterId, f.limit + 1],
  );
  return toCreatedPage(rows, f.limit);
}

/** `subject_type` and `subject_id` are patched together (the caller enforces both or neither). */
export async function updateNote(q: Queryable, actor: Actor, id: string, patch: NotePatch): Promise<Note | null> {
  // No guard: the UPDATE below re-finds the row under its own lock (a delete meanwhile: 404), and
  // If-Match is checked on the row the use case locked. The lock only orders this after a delete.
  const note = await getNote(q, actor, id, { forUpdate: true });
  if (!note) return null;
  await assertOwnedRefs(q, note.user_id, subjectRef('subject_id', patch.subject_type, patch.subject_id));
  const params: unknown[] = [id];
  const set = patchSet(patch, ['content', 'subject_type', 'subject_id', 'tags'], params, ['tags']);
  if (!set) return note;
  const { rows } = await q.query<Note>(
    'note.update',
    `UPDATE note SET ${set}, updated_at = now() WHERE id = $1 RETURNING ${COLUMNS}`,
    params,
  );
  return rows[0];
}

export async function deleteNote(q: Queryable, actor: Actor, id: string): Promise<Note | null> {
  const { rows } = await q.query<Note>(
    'note.delete',
    `DELETE FROM note WHERE id = $1 AND ($2::uuid IS NULL OR user_id = $2) RETURNING ${COLUMNS}`,
    [id, actor.userId],
  );
  return rows[0] ?? null;
}
