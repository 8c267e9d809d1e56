// The one way a REST mutation is written: the handler's rows, its outbox events and the
// idempotency record in one transaction; after commit the events are published.
import type { Context } from 'hono';
import type { Queryable } from '@mi/lib/db/pool';
import { appendEvent, type EventBody, type StoredEvent } from '@mi/lib/events';
import type { AppEnv } from './env';
import { completeIdempotency } from './middleware/idempotency';

export type Emit = (userId: string, event: EventBody) => Promise<void>;

export async function commit<T>(
  c: Context<AppEnv>,
  status: 200 | 201 | 204,
  fn: (tx: Queryable, emit: Emit) => Promise<T>,
): Promise<Response> {
  const { db, events } = c.var.deps;
  const claim = c.var.idempotency;
  const emitted: StoredEvent[] = [];
  const ctx = { originClientId: c.var.clientId, trace: c.var.trace };
  const body = await db.withTransaction(async (tx) => {
    const emit: Emit = async (userId, event) => {
      emitted.push(await appendEvent(tx, userId, event, ctx));
    };
    const result = await fn(tx, emit);
    const stored = status === 204 ? null : toJson(result);
    if (claim) await completeIdempotency(tx, claim, status, stored);
    return stored;
  });
  if (claim) claim.completed = true;
  await events.publish(emitted);
  return status === 204 ? c.body(null, 204) : c.json(body as object, status);
}

/** What the client receives (dates as ISO strings), also what a replay returns. */
function toJson(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v));
}
