// The one way a REST mutation is written: a use case (lib/use-cases) run in its unit of work
// (rows, events, publish after commit) with the idempotency record and the exact response bytes
// in the same transaction.
import type { Context, TypedResponse } from 'hono';
import type { JSONParsed } from 'hono/utils/types';
import { inUnitOfWork } from '@mi/lib/use-cases/unit-of-work';
import type { UseCase } from '@mi/lib/use-cases/use-case';
import { actorOf } from './actor';
import type { AppEnv } from './env';
import { setEtag } from './etag';
import { completeIdempotency } from './middleware/idempotency';

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
  await inUnitOfWork(c.var.deps, (tx, emit) => useCase({ tx, emit, actor }, input), {
    ctx: { originClientId: c.var.clientId, trace: c.var.trace },
    beforeCommit: async (tx, result) => {
      if (opts.etag) setEtag(c, result);
      code = typeof status === 'function' ? status(result) : status;
      raw = code === 204 ? null : JSON.stringify(result);
      headers = replayedHeaders(c, raw);
      if (claim) await completeIdempotency(tx, claim, code, raw, headers);
    },
  });
  if (claim) claim.completed = true;
  // The body is the JSON text of the result: typed as the JSON it is, so routes check it against their schema.
  return (raw === null ? c.body(null, 204, headers) : c.body(raw, code as 200 | 201 | 202, headers)) as Committed<T, S>;
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
