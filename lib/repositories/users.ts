// Users are created on first sight of their token (upsert by identity_id).
import type { UserClaims } from '../adapters/auth';
import type { Queryable } from '../db/pool';
import { DomainError } from '../errors';

/** A valid identity whose email another identity already has (decisions.md section 6, Identities). */
export const accountConflict = () =>
  new DomainError('account_conflict', 'another account already uses this email address; sign in with that account or change the email at your identity provider');

export interface User {
  id: string;
  username: string;
  email: string;
  identity_id: string;
  person_id: string | null;
  created_at: string;
  updated_at: string;
}

const COLUMNS = 'id, username, email, identity_id, person_id, created_at, updated_at';

export async function findOrCreateUser(q: Queryable, claims: UserClaims): Promise<User> {
  const found = await q.query<User>('user.by_identity', `SELECT ${COLUMNS} FROM app_user WHERE identity_id = $1`, [claims.identityId]);
  const existing = found.rows[0];
  if (existing && existing.email === claims.email && existing.username === claims.username) return existing;
  // The identity is upserted; the only unique key left to collide is the email (any case).
  const { rows } = await q.query<User>(
    'user.upsert',
    `INSERT INTO app_user (identity_id, email, username) VALUES ($1, $2, $3)
     ON CONFLICT (identity_id) DO UPDATE SET email = EXCLUDED.email, username = EXCLUDED.username, updated_at = now()
     RETURNING ${COLUMNS}`,
    [claims.identityId, claims.email, claims.username],
  ).catch((err: unknown) => {
    throw err instanceof DomainError && err.code === 'already_exists' ? accountConflict() : err;
  });
  return rows[0];
}
