// The second shape of an operation, for the few that cannot be one unit of work because object
// storage (or the bus) sits between their database steps: a stored upload before its row commits,
// a composed take before `recording.finalized`, a meeting's objects before its rows are purged.
// A workflow is `(ctx, input) => Promise<O>` like a use case; its context holds the adapters and
// `run`, which commits one transactional step (a UseCase) in a unit of work of its own, as the
// workflow's actor and with the edge's event context. Reads between steps use `ctx.deps.db`;
// every write goes through `run`. Every edge starts one with `runWorkflow`.
import type { ObjectStore } from '../adapters/storage';
import type { Actor } from '../domain/actor';
import type { EventContext } from '../events/outbox';
import type { Logger } from '../telemetry/log';
import type { UnitOfWorkDeps } from './unit-of-work';
import { asActor, runUseCase, type UseCase } from './use-case';

/** The adapters every workflow may use; a workflow needing more (the bus) widens D. */
export interface WorkflowDeps extends UnitOfWorkDeps {
  store: ObjectStore;
  log: Logger;
}

export interface WorkflowContext<D extends WorkflowDeps = WorkflowDeps> {
  deps: D;
  actor: Actor;
  /** Commits one step: the use case in its own unit of work (its events published after commit). */
  run<I, O>(useCase: UseCase<I, O>, input: I): Promise<O>;
}

export type Workflow<I, O, D extends WorkflowDeps = WorkflowDeps> = (ctx: WorkflowContext<D>, input: I) => Promise<O>;

/** Runs a workflow for an actor: REST routes, the sweep and tests all start one this way. */
export function runWorkflow<I, O, D extends WorkflowDeps>(
  deps: D,
  actor: Actor,
  workflow: Workflow<I, O, D>,
  input: I,
  eventCtx?: EventContext,
): Promise<O> {
  deps = asActor(deps, actor); // its reads between steps declare the actor too
  const run = <SI, SO>(useCase: UseCase<SI, SO>, stepInput: SI) =>
    runUseCase(deps, actor, useCase, stepInput, eventCtx);
  return workflow({ deps, actor, run }, input);
}
