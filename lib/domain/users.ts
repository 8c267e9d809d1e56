// Users are created on first sight of their token (upsert by identity_id).
import type { UserClaims } from '../auth';
import type { Queryable } from '../db/pool';

export interface User {
  id: string;
  username: string;
  email: string;
  identity_id: string;
  person_id: string | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, username, email, identity_id, person_id, created_at, updated_at';

export async function findOrCreateUser(q: Queryable, claims: UserClaims): Promise<User> {
  const found = await q.query<User>('user.by_identity', `SELECT ${COLUMNS} FROM app_user WHERE identity_id = $1`, [claims.identityId]);
  const existing = found.rows[0];
  if (existing && existing.email === claims.email && existing.username === claims.username) return existing;
  const { rows } = await q.query<User>(
    'user.upsert',
    `INSERT INTO app_user (identity_id, email, username) VALUES ($1, $2, $3)
     ON CONFLICT (identity_id) DO UPDATE SET email = EXCLUDED.email, username = EXCLUDED.username, updated_at = now()
     RETURNING ${COLUMNS}`,
    [claims.identityId, claims.email, claims.username],
  );
  return rows[0];
}

export async function getUser(q: Queryable, id: string): Promise<User | null> {
  const { rows } = await q.query<User>('user.get', `SELECT ${COLUMNS} FROM app_user WHERE id = $1`, [id]);
  return rows[0] ?? null;
}
