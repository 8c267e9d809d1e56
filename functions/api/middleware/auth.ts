import type { MiddlewareHandler } from 'hono';
import type { Scheme } from '@mi/lib/adapters/auth';
import { DomainError } from '@mi/lib/errors';
import { sendProblem, ValidationError } from '@mi/lib/errors/problem';
import { erasedUsers } from '@mi/lib/repositories/erasure';
import { findOrCreateUser } from '@mi/lib/repositories/users';
import type { AppEnv } from '../env';

/** Enforces the schemes an operation accepts and sets `principal` (users created on first sight). */
export function requireAuth(schemes: readonly Scheme[]): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const { auth } = c.var.deps;
    // Finding the caller's account (by identity, before any user is known) is the service's work.
    const db = c.var.deps.db.as({ service: 'api' });
    const cred = await auth.authenticate(c.req.header('authorization'), schemes);
    if (cred.scheme === 'service') {
      c.set('principal', { kind: 'service', userId: null });
    } else {
      const user = await findOrCreateUser(db, cred.claims);
      c.set('principal', { kind: 'user', userId: user.id, user });
      c.set('log', c.var.log.child({ user_id: user.id }));
    }
    // The tenant boundary (issue 38): everything the request does after this declares its
    // caller to the database, whose row policies then show no other user's rows.
    const scope = c.var.principal.userId ? { userId: c.var.principal.userId } : ({ service: 'api' } as const);
    c.set('deps', { ...c.var.deps, db: c.var.deps.db.as(scope) });
    await next();
    // A request that raced DELETE /me: its references (and the account) vanished under it, so
    // its 422 (a reference gone) answers 404, the account is gone. Decided here, where the
    // account was found, and only on that error path (one query).
    if (c.error && c.var.principal?.kind === 'user' && refusedReference(c.error)) {
      const erased = await erasedUsers(db, [c.var.principal.userId]).catch(() => []);
      if (erased.length)
        c.res = sendProblem(c, new DomainError('not_found', 'the account no longer exists (it was erased)'));
    }
  };
}

/** A 422 the data decided (not the request's own validation errors: they are decided before any SQL). */
const refusedReference = (err: Error): boolean =>
  err instanceof DomainError && err.code === 'unprocessable' && !(err instanceof ValidationError);
