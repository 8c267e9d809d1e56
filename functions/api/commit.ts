// The one way a REST mutation is written: the handler's rows, its outbox events and the
// idempotency record in one transaction; after commit the events are published.
import type { Context, TypedResponse } from 'hono';
import type { JSONParsed } from 'hono/utils/types';
import type { Queryable } from '@mi/lib/db/pool';
import { appendEvents, type EventBody, type StoredEvent } from '@mi/lib/events';
import type { AppEnv } from './env';
import { completeIdempotency } from './middleware/idempotency';

export type Emit = (userId: string, event: EventBody) => Promise<void>;

/** What a handler answers: the result as JSON (dates as strings), or nothing with 204. */
export type Committed<T, S extends 200 | 201 | 204> = Response & (S extends 204 ? TypedResponse<null, 204, 'body'> : TypedResponse<JSONParsed<T>, S, 'json'>);

export async function commit<T, S extends 200 | 201 | 204>(
  c: Context<AppEnv>,
  status: S,
  fn: (tx: Queryable, emit: Emit) => Promise<T>,
): Promise<Committed<T, S>> {
  const { db, events } = c.var.deps;
  const claim = c.var.idempotency;
  const emitted: StoredEvent[] = [];
  const ctx = { originClientId: c.var.clientId, trace: c.var.trace };
  // What the client receives (dates as ISO strings), serialised once: a replay sends these bytes.
  let headers: Record<string, string> = {};
  const raw = await db.withTransaction(async (tx) => {
    // Collected, then written in one statement per user at the end of the transaction.
    const pending = new Map<string, EventBody[]>();
    const emit: Emit = async (userId, event) => {
      pending.set(userId, [...(pending.get(userId) ?? []), event]);
    };
    const result = await fn(tx, emit);
    for (const [userId, bodies] of pending) emitted.push(...(await appendEvents(tx, userId, bodies, ctx)));
    const text = status === 204 ? null : JSON.stringify(result);
    headers = replayedHeaders(c, text);
    if (claim) await completeIdempotency(tx, claim, status, text, headers);
    return text;
  });
  if (claim) claim.completed = true;
  await events.publish(emitted);
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
