// The one way a REST mutation is written: a use case (lib/use-cases) run in its unit of work
// (rows, events, publish after commit) with the idempotency record and the exact response bytes
// in the same transaction. An operation with object storage between its steps is a workflow
// (lib/use-cases/workflow.ts), run by `perform`; the routes that run one take no Idempotency-Key
// (a raw body) or record it first with `commit` (DELETE /me).
import type { Context, TypedResponse } from 'hono';
import type { JSONParsed } from 'hono/utils/types';
import type { EventContext } from '@mi/lib/events/outbox';
import type { Queryable } from '@mi/lib/db/pool';
import { type Emit, inUnitOfWork } from '@mi/lib/use-cases/unit-of-work';
import type { UseCase } from '@mi/lib/use-cases/use-case';
import { runWorkflow, type Workflow } from '@mi/lib/use-cases/workflow';
import { actorOf } from './actor';
import type { AppDeps, AppEnv } from './env';
import { setEtag } from './etag';
import { answerOf, claimIdempotency, completion, type StoredRecord } from './middleware/idempotency';

/** What a handler answers: the result as JSON (dates as strings), or nothing with 204. */
export type Committed<T, S extends 200 | 201 | 202 | 204> = Response &
  (S extends 204 ? TypedResponse<null, 204, 'body'> : TypedResponse<JSONParsed<T>, S, 'json'>);

export interface CommitOptions {
  /** The result is a single record: its ETag goes on the response (and on a replay). */
  etag?: boolean;
}

export async function commit<I, T, S extends 200 | 201 | 202 | 204>(
  c: Context<AppEnv>,
  /** The status, or how the committed result decides it (read in the transaction, e.g. created or replaced). */
  status: S | ((result: T) => S),
  useCase: UseCase<I, T>,
  input: I,
  opts: CommitOptions = {},
): Promise<Committed<T, S>> {
  const claim = c.var.idempotency;
  // What the client receives (dates as ISO strings), serialised once: a replay sends these bytes.
  let raw: string | null = null;
  let headers: Record<string, string> = {};
  let code = typeof status === 'function' ? undefined : status;
  const actor = actorOf(c);
  // The key is claimed by the transaction's first statement; a key already answered rolls it back.
  let answered: StoredRecord | null = null;
  try {
    const run = async (tx: Queryable, emit: Emit) => {
      if (claim && (answered = await claimIdempotency(tx, claim))) throw REPLAY;
      return useCase({ tx, emit, actor }, input);
    };
    await inUnitOfWork(c.var.deps, run, {
      ctx: eventContext(c),
      last: (result) => {
        if (opts.etag) setEtag(c, result);
        code = typeof status === 'function' ? status(result) : status;
        raw = code === 204 ? null : JSON.stringify(result);
        headers = replayedHeaders(c, raw);
        return claim ? completion(claim, code, raw, headers) : null;
      },
    });
  } catch (err) {
    if (err !== REPLAY) throw err;
    return answerOf(c, answered!) as Committed<T, S>;
  }
  // The body is the JSON text of the result: typed as the JSON it is, so routes check it against their schema.
  return (raw === null ? c.body(null, 204, headers) : c.body(raw, code as 200 | 201 | 202, headers)) as Committed<T, S>;
}

/** Thrown inside the transaction to roll back a request whose key was already answered. */
const REPLAY = new Error('idempotent replay');

/** Runs a workflow for the caller; its steps' events carry the request's client and trace, as commit's do. */
export function perform<I, O>(c: Context<AppEnv>, workflow: Workflow<I, O, AppDeps>, input: I): Promise<O> {
  return runWorkflow(c.var.deps, actorOf(c), workflow, input, eventContext(c));
}

function eventContext(c: Context<AppEnv>): EventContext {
  return { originClientId: c.var.clientId, trace: c.var.trace };
}

// The headers that describe the representation (set by the handler: ETag, Location); the rest
// (CORS, tracing) belong to each request.
const REPLAYED = ['etag', 'location'];

function replayedHeaders(c: Context<AppEnv>, text: string | null): Record<string, string> {
  const out: Record<string, string> = text === null ? {} : { 'content-type': 'application/json' };
  for (const name of REPLAYED) {
    const value = c.res.headers.get(name);
    if (value !== null) out[name] = value;
  }
  return out;
}
