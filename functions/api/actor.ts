import type { Context } from 'hono';
import type { Actor } from '@mi/lib/domain/actor';
import type { AppEnv } from './env';

export const actorOf = (c: Context<AppEnv>): Actor => ({ userId: c.var.principal.userId });

/** The calling user's id; only for bearer-only operations. */
export function userIdOf(c: Context<AppEnv>): string {
  const id = c.var.principal.userId;
  if (!id) throw new Error('bearer-only operation reached without a user');
  return id;
}
