// Tags repository: a user's tag names. No deleted_at, so delete is a hard delete.
import type { Queryable } from '../db/pool';
import type { Actor } from '../domain/actor';
import { decodeCursor, toPage, type Page } from '../domain/pagination';

export interface Tag {
  id: string;
  user_id: string;
  name: string;
  created_at: string;
  updated_at: string;
}

const COLUMNS = 'id, user_id, name, created_at, updated_at';

export async function createTag(q: Queryable, userId: string, name: string): Promise<Tag> {
  const { rows } = await q.query<Tag>(
    'tag.create',
    `INSERT INTO tag (user_id, name) VALUES ($1, $2) RETURNING ${COLUMNS}`,
    [userId, name],
  );
  return rows[0];
}

export async function getTag(q: Queryable, actor: Actor, id: string): Promise<Tag | null> {
  const { rows } = await q.query<Tag>(
    'tag.get',
    `SELECT ${COLUMNS} FROM tag WHERE id = $1 AND ($2::uuid IS NULL OR user_id = $2)`,
    [id, actor.userId],
  );
  return rows[0] ?? null;
}

/** The user's tags by name. */
export async function listTags(
  q: Queryable,
  userId: string,
  f: { limit: number; cursor?: string },
): Promise<Page<Tag>> {
  const after = decodeCursor(f.cursor, 2);
  const { rows } = await q.query<Tag>(
    'tag.list',
    `SELECT ${COLUMNS} FROM tag WHERE user_id = $1 AND ($2::text IS NULL OR (name, id) > ($2::text, $3::uuid))
     ORDER BY name, id LIMIT $4`,
    [userId, after?.[0] ?? null, after?.[1] ?? null, f.limit + 1],
  );
  return toPage(rows, f.limit, (t) => [t.name, t.id]);
}

export async function renameTag(q: Queryable, actor: Actor, id: string, name: string): Promise<Tag | null> {
  const { rows } = await q.query<Tag>(
    'tag.rename',
    `UPDATE tag SET name = $3, updated_at = now() WHERE id = $1 AND ($2::uuid IS NULL OR user_id = $2) RETURNING ${COLUMNS}`,
    [id, actor.userId, name],
  );
  return rows[0] ?? null;
}

export async function deleteTag(q: Queryable, actor: Actor, id: string): Promise<Tag | null> {
  const { rows } = await q.query<Tag>(
    'tag.delete',
    `DELETE FROM tag WHERE id = $1 AND ($2::uuid IS NULL OR user_id = $2) RETURNING ${COLUMNS}`,
    [id, actor.userId],
  );
  return rows[0] ?? null;
}
