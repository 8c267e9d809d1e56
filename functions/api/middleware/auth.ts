import type { MiddlewareHandler } from 'hono';
import type { Scheme } from '@mi/lib/adapters/auth';
import { findOrCreateUser } from '@mi/lib/repositories/users';
import type { AppEnv } from '../env';

/** Enforces the schemes an operation accepts and sets `principal` (users created on first sight). */
export function requireAuth(schemes: readonly Scheme[]): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const { auth, db } = c.var.deps;
    const cred = await auth.authenticate(c.req.header('authorization'), schemes);
    if (cred.scheme === 'service') {
      c.set('principal', { kind: 'service', userId: null });
    } else {
      const user = await findOrCreateUser(db, cred.claims);
      c.set('principal', { kind: 'user', userId: user.id, user });
      c.set('log', c.var.log.child({ user_id: user.id }));
    }
    await next();
  };
}
