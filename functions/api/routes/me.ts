import type { OpenAPIHono } from '@hono/zod-openapi';
import { SERVICE } from '@mi/lib/domain/actor';
import { continueErasure, requestAccountErasure } from '@mi/lib/use-cases/account';
import { runWorkflow } from '@mi/lib/use-cases/workflow';
import { userIdOf } from '../actor';
import { commit } from '../commit';
import type { AppEnv } from '../env';
import { jsonResponse, op, problemResponse, z } from '../openapi';

/** How long DELETE /me works on the erasure itself before answering 202 and leaving the rest to the sweep. */
const ERASURE_REQUEST_BUDGET_MS = 10_000;

export const UserSchema = z
  .object({
    id: z.string().uuid(),
    username: z.string(),
    email: z.string(),
    identity_id: z.string(),
    person_id: z.string().uuid().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi('User');

const getMe = op({
  method: 'get',
  path: '/me',
  operationId: 'getMe',
  tags: ['users'],
  summary: 'The calling user (created on first sight of their token)',
  description:
    "Returns the caller's user record. The first request with a new identity creates it from the token's claims; a token whose email belongs to another identity answers 409 account_conflict.",
  auth: ['bearer'],
  responses: { 200: jsonResponse(UserSchema, 'the user') },
});

export const ErasurePendingSchema = z
  .object({
    status: z.literal('erasing'),
    detail: z.string(),
  })
  .openapi('AccountErasurePending');

const deleteMe = op({
  method: 'delete',
  path: '/me',
  operationId: 'deleteMe',
  tags: ['users'],
  summary: 'Erase the calling account: every row of the user and every stored object of their meetings',
  description:
    "Stops the user's live recording takes first, then deletes every row of the user (meetings with everything in them, people, " +
    'tasks, notes, threads, tags, outbox events, idempotency records) and every stored object of their meetings (segments, gap ' +
    'uploads, composed audio, uploads). Unfinished account exports are cancelled and every export archive is deleted. 204 when everything is gone; 202 when stored objects are still being removed: the request ' +
    'is recorded before anything is deleted, and the sweep finishes it. Idempotent: repeating it is harmless. The same identity ' +
    'signing in afterwards starts with an empty account (a new user id). See docs/lifecycle.md.',
  auth: ['bearer'],
  responses: {
    204: { description: 'the account is erased' },
    202: jsonResponse(
      ErasurePendingSchema,
      'rows are erased or being erased; stored objects are still being removed by the sweep',
    ),
    503: problemResponse('the database is unavailable; nothing was changed, retry after `Retry-After` seconds'),
  },
});

export function registerMe(app: OpenAPIHono<AppEnv>) {
  app.openapi(getMe, (c) => {
    const p = c.var.principal;
    if (p.kind !== 'user') throw new Error('unreachable: bearer only');
    return c.json(p.user, 200);
  });

  app.openapi(deleteMe, async (c) => {
    const userId = userIdOf(c);
    // Recorded (and live takes stopped) before anything is deleted: whatever happens next, the sweep finishes it.
    await commit(c, 204, requestAccountErasure, undefined);
    const deadline = Date.now() + ERASURE_REQUEST_BUDGET_MS;
    // Erasure also removes rows no user scope sees (the ML's idempotency records of the user's
    // meetings): the service's work, as in the sweep (issue 38). Its steps emit no event.
    const asService = { ...c.var.deps, db: c.var.deps.db.as({ service: 'api' }) };
    const done = await runWorkflow(asService, SERVICE, continueErasure, { userId, deadline }).catch((err: unknown) => {
      c.var.log.warn(
        { err: (err as Error).message, user_id: userId },
        'account erasure interrupted; the sweep finishes it',
      );
      return false;
    });
    if (done) return c.body(null, 204);
    return c.json(
      { status: 'erasing' as const, detail: 'the account is being erased; stored objects are still being removed' },
      202,
    );
  });
}
