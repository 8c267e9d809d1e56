// People repository: contacts and meeting participants, scoped to their user. Voice fields
// are written only from the person's voice samples (voice-samples.ts), never by user input.
import pgvector from 'pgvector';
import { jsonParam, patchSet } from '../db/params';
import type { Queryable } from '../db/pool';
import type { Actor } from '../domain/actor';
import { unprocessable } from '../errors';
import { decodeCursor, toPage, type Page } from '../domain/pagination';
import type { User } from './users';

export type VoiceModelStatus = 'untrained' | 'training' | 'ready';

export interface Person {
  id: string;
  user_id: string;
  display_name: string;
  full_name: string | null;
  title: string | null;
  role: string | null;
  email: string | null;
  company: string | null;
  tags: unknown;
  voice_model_status: VoiceModelStatus;
  voice_confidence: number | null;
  voice_vector: number[] | null;
  created_at: string;
  updated_at: string;
}

/** A person without the 192-number voice_vector (lists and matches). */
export type PersonBrief = Omit<Person, 'voice_vector'>;

export interface PersonInput {
  display_name: string;
  full_name?: string | null;
  title?: string | null;
  role?: string | null;
  email?: string | null;
  company?: string | null;
  tags?: unknown;
}

export type PersonPatch = Partial<PersonInput>;

export const BRIEF_COLUMNS =
  'id, user_id, display_name, full_name, title, role, email, company, tags, voice_model_status, voice_confidence, created_at, updated_at';
const COLUMNS = `${BRIEF_COLUMNS}, voice_vector::text AS voice_vector`;
const PATCHABLE = ['display_name', 'full_name', 'title', 'role', 'email', 'company', 'tags'] as const;
const likeEscape = (s: string) => s.replace(/[\\%_]/g, '\\$&');

type PersonRow = Omit<Person, 'voice_vector'> & { voice_vector: string | null };
const fromRow = (r: PersonRow): Person => ({
  ...r,
  voice_vector: r.voice_vector === null ? null : (pgvector.fromSql(r.voice_vector) as number[]),
});

export async function createPerson(q: Queryable, userId: string, input: PersonInput): Promise<Person> {
  const { rows } = await q.query<PersonRow>(
    'person.create',
    `INSERT INTO person (user_id, display_name, full_name, title, role, email, company, tags)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
    [
      userId,
      input.display_name,
      input.full_name ?? null,
      input.title ?? null,
      input.role ?? null,
      input.email ?? null,
      input.company ?? null,
      jsonParam(input.tags),
    ],
  );
  return fromRow(rows[0]);
}

/** The person if the actor may see it; `forUpdate` locks it for the transaction. */
export async function getPerson(
  q: Queryable,
  actor: Actor,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<Person | null> {
  const { rows } = await q.query<PersonRow>(
    'person.get',
    `SELECT ${COLUMNS} FROM person WHERE id = $1 AND ($2::uuid IS NULL OR user_id = $2)${opts.forUpdate ? ' FOR UPDATE' : ''}`,
    [id, actor.userId],
  );
  return rows[0] ? fromRow(rows[0]) : null;
}

export interface PersonFilter {
  limit: number;
  cursor?: string;
  q?: string;
}

/** The user's people by display_name; `q` matches display_name or full_name (case-insensitive). */
export async function listPeople(q: Queryable, userId: string, f: PersonFilter): Promise<Page<PersonBrief>> {
  const after = decodeCursor(f.cursor, 2);
  const { rows } = await q.query<PersonBrief>(
    'person.list',
    `SELECT ${BRIEF_COLUMNS} FROM person
     WHERE user_id = $1
       AND ($2::text IS NULL OR display_name ILIKE '%' || $2 || '%' OR full_name ILIKE '%' || $2 || '%')
       AND ($3::text IS NULL OR (display_name, id) > ($3::text, $4::uuid))
     ORDER BY display_name, id LIMIT $5`,
    [userId, f.q === undefined ? null : likeEscape(f.q), after?.[0] ?? null, after?.[1] ?? null, f.limit + 1],
  );
  return toPage(rows, f.limit, (p) => [p.display_name, p.id]);
}

export async function updatePerson(q: Queryable, actor: Actor, id: string, patch: PersonPatch): Promise<Person | null> {
  const params: unknown[] = [id, actor.userId];
  const set = patchSet(patch, PATCHABLE, params, ['tags']);
  if (!set) return getPerson(q, actor, id);
  const { rows } = await q.query<PersonRow>(
    'person.update',
    `UPDATE person SET ${set}, updated_at = now() WHERE id = $1 AND ($2::uuid IS NULL OR user_id = $2) RETURNING ${COLUMNS}`,
    params,
  );
  return rows[0] ? fromRow(rows[0]) : null;
}

/**
 * Hard delete. The schema's delete rules do the rest: segments and tasks lose the person_id,
 * summaries, label assignments, voice samples and attendances go, app_user.person_id becomes
 * null. (No other person's model depends on this one's samples, so nothing is recomputed.)
 */
export async function deletePerson(
  q: Queryable,
  actor: Actor,
  id: string,
): Promise<{ id: string; user_id: string } | null> {
  const { rows } = await q.query<{ id: string; user_id: string }>(
    'person.delete',
    'DELETE FROM person WHERE id = $1 AND ($2::uuid IS NULL OR user_id = $2) RETURNING id, user_id',
    [id, actor.userId],
  );
  return rows[0] ?? null;
}

/**
 * Serialises the changes of one user's speaker identity (merging people, assigning, unassigning
 * and moving speaker labels) for the rest of the transaction. Taken first, before any row lock:
 * a merge rewrites attributions across all the user's meetings while an assignment holds a
 * meeting's segments, and each would otherwise wait for rows the other holds (a deadlock).
 * No guard: this is the helper; each call of it carries its own guard (merge, assign, unassign, move).
 */
export async function lockSpeakerIdentity(tx: Queryable, userId: string): Promise<void> {
  const sql = `SELECT pg_advisory_xact_lock(hashtextextended('speaker-identity:' || $1, 0))`;
  await tx.query('person.lock_identity', sql, [userId]);
}

/** Whether `personId` is one of `userId`'s people (another user's counts as missing). */
export async function ownsPerson(q: Queryable, userId: string, personId: string): Promise<boolean> {
  const { rows } = await q.query('person.owned', 'SELECT 1 FROM person WHERE id = $1 AND user_id = $2', [
    personId,
    userId,
  ]);
  return rows.length > 0;
}

/**
 * The person each of `personIds` stands for now: itself, or the person it was merged into
 * (person_merge, chains kept flat by the merge); decisions.md section 8: a write naming a merged
 * person is attributed, never refused. The people are locked (FOR KEY SHARE) so a merge holding
 * one commits first; then its record is read again. 422 (naming `field`) for ids that are not
 * `userId`'s people (another user's count as nonexistent).
 */
export async function survivingPeople(
  q: Queryable,
  userId: string,
  personIds: (string | null | undefined)[],
  field = 'person_id',
): Promise<Map<string, string>> {
  const named = [...new Set(personIds.filter((p): p is string => !!p))];
  const people = new Map<string, string>();
  if (!named.length) return people;
  for (let pass = 1; ; pass++) {
    // guard: surviving-people-lock | remove:  FOR KEY SHARE OF p | test: test/concurrency/speaker-identity.test.ts :: should lose no sample appended for the other person
    const { rows } = await q.query<{ named: string; person_id: string }>(
      'person.surviving',
      `SELECT u.id AS named, p.id AS person_id
       FROM unnest($2::uuid[]) AS u(id) LEFT JOIN person_merge m ON m.merged_id = u.id AND m.user_id = $1
       JOIN person p ON p.id = coalesce(m.person_id, u.id) AND p.user_id = $1
       FOR KEY SHARE OF p`,
      [userId, named],
    );
    for (const r of rows) people.set(r.named, r.person_id);
    const missing = named.filter((id) => !people.has(id));
    if (!missing.length) return people;
    // A merge that held a person we waited for has committed: its record is there now.
    if (pass === 2)
      throw unprocessable(
        `${field} does not exist`,
        missing.map((id) => ({ path: field, message: `person ${id} does not exist` })),
      );
  }
}

/** Sets or clears the user's own person record; null when `personId` is not the user's. */
export async function setOwnPerson(q: Queryable, userId: string, personId: string | null): Promise<User | null> {
  const { rows } = await q.query<User>(
    'user.set_person',
    `UPDATE app_user SET person_id = $2, updated_at = now()
     WHERE id = $1 AND ($2::uuid IS NULL OR EXISTS (SELECT 1 FROM person WHERE id = $2 AND user_id = $1))
     RETURNING id, username, email, identity_id, person_id, created_at, updated_at`,
    [userId, personId],
  );
  return rows[0] ?? null;
}
