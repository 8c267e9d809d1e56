// The one shape of a use case: a named operation of the product (create a meeting, assign a
// speaker label, stop a take, …) that every edge — the REST routes, the live service's
// WebSocket commands, the sweep — calls the same way. A use case runs inside a unit of work the
// edge opens for it (REST: functions/api/commit.ts, with the idempotency record; the others:
// `runUseCase` below): it reads and writes rows through the repositories (lib/repositories), emits
// typed events (lib/events/catalogue.ts constructors), raises DomainError (lib/errors.ts) and
// returns the API-shaped result (ISO strings, no Date). It knows nothing of HTTP or WebSocket.
// An operation with object storage between its commits is a Workflow (workflow.ts) of use cases.
import type { Database, Queryable } from '../db/pool';
import type { Actor } from '../domain/actor';
import type { EventContext } from '../events/outbox';
import { inUnitOfWork, type Emit, type UnitOfWorkDeps } from './unit-of-work';

export interface UseCaseContext {
  /** The unit of work's transaction. */
  tx: Queryable;
  /** Events written with the rows and published after commit. */
  emit: Emit;
  /** Who the operation acts for: a user, or the service (userId null) acting on any user's rows. */
  actor: Actor;
}

export type UseCase<I, O> = (ctx: UseCaseContext, input: I) => Promise<O>;

/** The calling user's id, for operations only a user (not the service) performs. */
export function userOf(ctx: UseCaseContext): string {
  const id = ctx.actor.userId;
  if (!id) throw new Error('bearer-only operation reached without a user');
  return id;
}

/** Runs a use case in its own unit of work: the edges other than REST (live service, sweep). */
export function runUseCase<I, O>(
  deps: UnitOfWorkDeps,
  actor: Actor,
  useCase: UseCase<I, O>,
  input: I,
  ctx?: EventContext,
): Promise<O> {
  return inUnitOfWork(asActor(deps, actor), (tx, emit) => useCase({ tx, emit, actor }, input), { ctx });
}

/**
 * The deps with their database declaring the actor (issue 38): a user's work sees only that
 * user's rows; the service's keeps the scope its process declared (live, sweep, REST's ML calls).
 */
export function asActor<D extends { db: Database }>(deps: D, actor: Actor): D {
  return actor.userId ? { ...deps, db: deps.db.as({ userId: actor.userId }) } : deps;
}

/**
 * An edge's condition on the current state of the record a use case is about to change (REST:
 * If-Match), checked on the row read FOR UPDATE in the use case's transaction; it throws
 * DomainError version_mismatch. Absent, the row is not read for it.
 */
export type Precondition = (current: unknown) => void;

export async function checkPrecondition(
  precondition: Precondition | undefined,
  current: () => Promise<unknown>,
): Promise<void> {
  if (precondition) precondition(await current());
}
