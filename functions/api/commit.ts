// The one way a REST mutation is written: the handler's rows, its outbox events and the
// idempotency record in one transaction; after commit the events are published.
import type { Context } from 'hono';
import type { Queryable } from '@mi/lib/db/pool';
import { appendEvents, type EventBody, type StoredEvent } from '@mi/lib/events';
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
    // Collected, then written in one statement per user at the end of the transaction.
    const pending = new Map<string, EventBody[]>();
    const emit: Emit = async (userId, event) => {
      pending.set(userId, [...(pending.get(userId) ?? []), event]);
    };
    const result = await fn(tx, emit);
    for (const [userId, bodies] of pending) emitted.push(...(await appendEvents(tx, userId, bodies, ctx)));
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
