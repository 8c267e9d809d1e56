// Users are created on first sight of their token (upsert by identity_id).
import type { UserClaims } from '../adapters/auth';
import type { Queryable } from '../db/pool';
import { DomainError } from '../errors';

/** A valid identity whose email another identity already has (decisions.md section 6, Identities). */
export const accountConflict = () =>
  new DomainError(
    'account_conflict',
    'another account already uses this email address; sign in with that account or change the email at your identity provider',
  );

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
  const found = await q.query<User>('user.by_identity', `SELECT ${COLUMNS} FROM app_user WHERE identity_id = $1`, [
    claims.identityId,
  ]);
  const existing = found.rows[0];
  if (existing && (claims.email === null || existing.email === claims.email) && existing.username === claims.username)
    return existing;
  // The identity is upserted; the only unique key left to collide is the email, compared
  // NFKC-normalised, trimmed and lower-cased (the index app_user_email_key). A token without an
  // email keeps the stored one: erasing it would free the address for another identity. A new
  // identity without one gets an address of its own that no mail reaches.
  const { rows } = await q
    .query<User>(
      'user.upsert',
      `INSERT INTO app_user (identity_id, email, username) VALUES ($1, coalesce($2, $4), $3)
     ON CONFLICT (identity_id) DO UPDATE SET email = coalesce($2, app_user.email), username = EXCLUDED.username, updated_at = now()
     RETURNING ${COLUMNS}`,
      [claims.identityId, claims.email, claims.username, `${claims.identityId}@users.invalid`],
    )
    .catch((err: unknown) => {
      throw err instanceof DomainError && err.code === 'already_exists' ? accountConflict() : err;
    });
  return rows[0];
}
