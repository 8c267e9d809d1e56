// The one way a REST mutation is written: the unit of work (rows, events, publish after commit)
// with the idempotency record and the exact response bytes in the same transaction.
import type { Context, TypedResponse } from 'hono';
import type { JSONParsed } from 'hono/utils/types';
import type { Queryable } from '@mi/lib/db/pool';
import { inUnitOfWork, type Emit } from '@mi/lib/unit-of-work';
import type { AppEnv } from './env';
import { completeIdempotency } from './middleware/idempotency';

/** What a handler answers: the result as JSON (dates as strings), or nothing with 204. */
export type Committed<T, S extends 200 | 201 | 204> = Response & (S extends 204 ? TypedResponse<null, 204, 'body'> : TypedResponse<JSONParsed<T>, S, 'json'>);

export async function commit<T, S extends 200 | 201 | 204>(
  c: Context<AppEnv>,
  status: S,
  fn: (tx: Queryable, emit: Emit) => Promise<T>,
): Promise<Committed<T, S>> {
  const claim = c.var.idempotency;
  // What the client receives (dates as ISO strings), serialised once: a replay sends these bytes.
  let raw: string | null = null;
  let headers: Record<string, string> = {};
  await inUnitOfWork(c.var.deps, fn, {
    ctx: { originClientId: c.var.clientId, trace: c.var.trace },
    beforeCommit: async (tx, result) => {
      raw = status === 204 ? null : JSON.stringify(result);
      headers = replayedHeaders(c, raw);
      if (claim) await completeIdempotency(tx, claim, status, raw, headers);
    },
  });
  if (claim) claim.completed = true;
  // The body is the JSON text of the result: typed as the JSON it is, so routes check it against their schema.
  return (raw === null ? c.body(null, 204, headers) : c.body(raw, status as 200 | 201, headers)) as Committed<T, S>;
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
