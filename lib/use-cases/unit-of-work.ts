// The one unit of work: an operation's rows and the events it emits are written in one
// transaction, and the events are published after it commits. The edges run each use case
// (lib/use-cases) in one: REST through functions/api/commit.ts, the live service's commands and
// the sweep through runUseCase; the live recorder's stop uses it directly (its segment group
// commit, run-services/live/group-commit.ts, is a transaction of its own for throughput).
import type { Database, Queryable } from '../db/pool';
import type { EventBody } from '../events/catalogue';
import {
  appendEvents,
  type EventContext,
  type EventPublisher,
  type Statement,
  type StoredEvent,
} from '../events/outbox';

export type Emit = (userId: string, event: EventBody) => void;

export interface UnitOfWorkDeps {
  db: Database;
  /** Where committed events go: Pub/Sub (and, in the live service, its own connections first). */
  events: Pick<EventPublisher, 'publish' | 'quiet'>;
}

export interface UnitOfWorkOptions<T> {
  /** Origin client and trace of the events. */
  ctx?: EventContext;
  /**
   * The transaction's last write, made from its result (the idempotency record): it rides in the
   * statement that writes the events (one round trip less), or runs alone when there are none.
   */
  last?: (result: T) => Statement | null;
}

/**
 * Runs `fn` in a transaction (retried on serialization failures and deadlocks), writes what it
 * emitted, commits, then publishes. Only the committed attempt's events are published.
 */
export async function inUnitOfWork<T>(
  deps: UnitOfWorkDeps,
  fn: (tx: Queryable, emit: Emit) => Promise<T>,
  opts: UnitOfWorkOptions<T> = {},
): Promise<T> {
  let emitted: StoredEvent[] = [];
  const result = await deps.db.withTransaction(async (tx) => {
    emitted = [];
    // Collected, then written in one statement per user at the end of the transaction.
    const pending = new Map<string, EventBody[]>();
    const emit: Emit = (userId, event) => {
      pending.set(userId, [...(pending.get(userId) ?? []), event]);
    };
    const out = await fn(tx, emit);
    const last = opts.last?.(out) ?? undefined;
    const users = [...pending];
    for (const [i, [userId, bodies]] of users.entries()) {
      const rider = i === users.length - 1 ? last : undefined;
      emitted.push(...(await appendEvents(tx, userId, bodies, opts.ctx, deps.events.quiet?.(userId), rider)));
    }
    if (last && !users.length) await tx.query(last.name, last.text, last.params);
    return out;
  });
  await deps.events.publish(emitted);
  return result;
}
