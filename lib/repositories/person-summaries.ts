// Person summaries: notes about a person, written by a user. They have no user_id of their
// own, so every query is scoped through the person's owner.
import { jsonParam, patchSet } from '../db/params';
import type { Queryable } from '../db/pool';
import type { Actor } from '../domain/actor';
import { createdKey, decodeCreatedCursor, toCreatedPage, type Page } from '../domain/pagination';

export interface PersonSummary {
  id: string;
  person_id: string;
  author_id: string;
  summary: string;
  context: unknown;
  created_at: string;
  updated_at: string;
}

/** A summary with the user who owns its person (for EntityChanged). */
export type OwnedSummary = PersonSummary & { owner_id: string };

export interface SummaryPatch {
  summary?: string;
  context?: unknown;
}

const COLUMNS = 's.id, s.person_id, s.author_id, s.summary, s.context, s.created_at, s.updated_at';
// Keyset on milliseconds: the cursor carries a JS Date, which has no microseconds.

/** Creates a summary of one of the author's people; null when the person is not theirs. */
export async function createSummary(
  q: Queryable,
  authorId: string,
  personId: string,
  input: { summary: string; context?: unknown },
): Promise<PersonSummary | null> {
  const { rows } = await q.query<PersonSummary>(
    'person_summary.create',
    `INSERT INTO person_summary AS s (person_id, author_id, summary, context)
     SELECT p.id, $2, $3, $4 FROM person p WHERE p.id = $1 AND p.user_id = $2
     RETURNING ${COLUMNS}`,
    [personId, authorId, input.summary, jsonParam(input.context)],
  );
  return rows[0] ?? null;
}

/** The person's summaries, newest first (the caller has checked the person is visible). */
export async function listSummaries(
  q: Queryable,
  personId: string,
  f: { limit: number; cursor?: string },
): Promise<Page<PersonSummary>> {
  const [afterAt, afterId] = decodeCreatedCursor(f.cursor);
  const { rows } = await q.query<PersonSummary & { page_key: string }>(
    'person_summary.list',
    `SELECT ${COLUMNS}, ${createdKey('s.')} FROM person_summary s
     WHERE s.person_id = $1 AND ($2::timestamptz IS NULL OR (s.created_at, s.id) < ($2::timestamptz, $3::uuid))
     ORDER BY s.created_at DESC, s.id DESC LIMIT $4`,
    [personId, afterAt, afterId, f.limit + 1],
  );
  return toCreatedPage(rows, f.limit);
}

export async function updateSummary(
  q: Queryable,
  actor: Actor,
  id: string,
  patch: SummaryPatch,
): Promise<OwnedSummary | null> {
  const params: unknown[] = [id, actor.userId];
  const set = patchSet(patch, ['summary', 'context'], params, ['context']);
  const { rows } = await q.query<OwnedSummary>(
    'person_summary.update',
    `UPDATE person_summary s SET ${set ? `${set}, ` : ''}updated_at = now()
     FROM person p WHERE s.id = $1 AND p.id = s.person_id AND ($2::uuid IS NULL OR p.user_id = $2)
     RETURNING ${COLUMNS}, p.user_id AS owner_id`,
    params,
  );
  return rows[0] ?? null;
}

export async function deleteSummary(q: Queryable, actor: Actor, id: string): Promise<OwnedSummary | null> {
  const { rows } = await q.query<OwnedSummary>(
    'person_summary.delete',
    `DELETE FROM person_summary s USING person p
     WHERE s.id = $1 AND p.id = s.person_id AND ($2::uuid IS NULL OR p.user_id = $2)
     RETURNING ${COLUMNS}, p.user_id AS owner_id`,
    [id, actor.userId],
  );
  return rows[0] ?? null;
}
