// The one event path. A mutation writes its events to event_outbox inside its own transaction
// (with a per-user increasing seq); after commit they are published to Pub/Sub, to the topic of
// each live instance holding a connection of the user (EventRoutes), with the origin client id
// and trace context as attributes. Rows left unpublished (bus down, crash) are republished by
// the sweep, oldest first, so every event reaches the live instances that listen.
import type { Bus } from '../adapters/bus';
import { publishToInstances } from '../fanout/topics';
import type { EventBody } from './catalogue';
import type { Queryable } from '../db/pool';
import type { Logger } from '../telemetry/log';

export type { EntityAction, EventBody } from './catalogue';

/** The envelope every delivered event carries. */
export interface EventEnvelope {
  event_id: string;
  seq: number;
  occurred_at: string;
  user_id: string;
}

export type StoredEvent = EventEnvelope & {
  body: EventBody;
  origin_client_id: string | null;
  trace_context: Record<string, string> | null;
  /** Set by appendUserEvents, never sent: the routes version it saw, and whether no instance needed it. */
  written?: { routesVersion: number; published: boolean };
};

export interface EventContext {
  originClientId?: string | null;
  trace?: Record<string, string> | null;
}

interface OutboxRow {
  id: string;
  user_id: string;
  seq: number;
  event_type: string;
  payload: EventBody;
  origin_client_id: string | null;
  trace_context: Record<string, string> | null;
  created_at: string;
  routes_version?: number;
  published_at?: string | null;
}

const toStored = (r: OutboxRow): StoredEvent => ({
  event_id: r.id,
  seq: r.seq,
  occurred_at: r.created_at,
  user_id: r.user_id,
  body: r.payload,
  origin_client_id: r.origin_client_id,
  trace_context: r.trace_context,
});

/** A statement of the caller's, numbered from $1: `rider` runs it in the append's own round trip. */
export interface Statement {
  name: string;
  text: string;
  params: unknown[];
}

/**
 * Writes events of one user in the caller's transaction, in order, with consecutive seqs. `quiet`:
 * the routes version at which the user has no live instance (RouteCache.quiet); while the user's
 * version is still that one, the events are written published (nobody to send them to).
 */
export async function appendEvents(
  tx: Queryable,
  userId: string,
  bodies: EventBody[],
  ctx: EventContext = {},
  quiet?: number,
  rider?: Statement,
): Promise<StoredEvent[]> {
  return appendUserEvents(
    tx,
    bodies.map((body) => ({ userId, body, quiet })),
    ctx,
    rider,
  );
}

export async function appendEvent(
  tx: Queryable,
  userId: string,
  body: EventBody,
  ctx: EventContext = {},
): Promise<StoredEvent> {
  return (await appendEvents(tx, userId, [body], ctx))[0];
}

/**
 * Writes events of any number of users in one statement, whatever their count (the live
 * service's group commit): each user's events get consecutive seqs in the given order.
 * Returns the stored events in the order given.
 */
export async function appendUserEvents(
  tx: Queryable,
  events: { userId: string; body: EventBody; quiet?: number }[],
  ctx: EventContext = {},
  /** A write without RETURNING (a data-modifying WITH item of this statement); its $n follow ours. */
  rider?: Statement,
): Promise<StoredEvent[]> {
  if (!events.length) return [];
  const ride = rider ? `, rider AS (${rider.text.replace(/\$(\d+)/g, (_, n) => `$${Number(n) + 5}`)})` : '';
  // event_sequence rows are locked in user order, so that concurrent writers cannot deadlock. The
  // routes version is read under that lock: a hello bumps it (listenFrom) after its presence write.
  const { rows } = await tx.query<OutboxRow>(
    'events.append',
    `WITH input AS (
       SELECT u, e, q, ord, row_number() OVER (PARTITION BY u ORDER BY ord) AS rn, count(*) OVER (PARTITION BY u) AS n
       FROM unnest($1::uuid[], $2::jsonb[], $5::bigint[]) WITH ORDINALITY AS t(u, e, q, ord)
     ), reserved AS (
       INSERT INTO event_sequence (user_id, last_seq)
       SELECT u, count(*) FROM input GROUP BY u ORDER BY u
       ON CONFLICT (user_id) DO UPDATE SET last_seq = event_sequence.last_seq + EXCLUDED.last_seq
       RETURNING user_id, last_seq, routes_version
     ), written AS (
       INSERT INTO event_outbox (id, user_id, seq, event_type, payload, origin_client_id, trace_context, published_at)
       SELECT gen_random_uuid(), i.u, r.last_seq - i.n + i.rn, i.e->>'type', i.e, $3, $4,
              CASE WHEN i.q = r.routes_version THEN now() END
       FROM input i JOIN reserved r ON r.user_id = i.u ORDER BY i.ord
       RETURNING *
     )${ride}
     SELECT w.*, r.routes_version FROM written w JOIN reserved r USING (user_id)`,
    [
      events.map((e) => e.userId),
      events.map((e) => JSON.stringify(e.body)),
      ctx.originClientId ?? null,
      ctx.trace && Object.keys(ctx.trace).length ? JSON.stringify(ctx.trace) : null,
      events.map((e) => e.quiet ?? null),
      ...(rider?.params ?? []),
    ],
  );
  // RETURNING order is not guaranteed: match rows back by user and seq (per user, seqs follow the input order).
  const byUser = new Map<string, StoredEvent[]>();
  for (const r of rows) {
    const e = { ...toStored(r), written: { routesVersion: r.routes_version!, published: !!r.published_at } };
    const list = byUser.get(r.user_id);
    if (list) list.push(e);
    else byUser.set(r.user_id, [e]);
  }
  for (const list of byUser.values()) list.sort((a, b) => a.seq - b.seq);
  const taken = new Map<string, number>();
  return events.map((e) => {
    const i = taken.get(e.userId) ?? 0;
    taken.set(e.userId, i + 1);
    return byUser.get(e.userId)![i];
  });
}

/** The latest event seq of each of these users that has one. */
export async function latestSeqs(q: Queryable, userIds: string[]): Promise<Map<string, number>> {
  const { rows } = await q.query<{ user_id: string; last_seq: number }>(
    'events.latest_seqs',
    'SELECT user_id, last_seq FROM event_sequence WHERE user_id = ANY($1::uuid[])',
    [userIds],
  );
  return new Map(rows.map((r) => [r.user_id, Number(r.last_seq)]));
}

/**
 * A hello's starting point: the user's latest seq, read while bumping the user's routes version
 * (after the tab's presence write), under the row lock appends take. A commit before it is in
 * the replay; one after sees the new version and reads presence again (RouteCache).
 */
export async function listenFrom(q: Queryable, userId: string): Promise<number> {
  // guard: routes-version-bump | remove: , routes_version = event_sequence.routes_version + 1 | test: test/live/route-cache.test.ts :: connects after its routes were cached
  const { rows } = await q.query<{ last_seq: number }>(
    'events.listen_from',
    `INSERT INTO event_sequence (user_id, last_seq, routes_version) VALUES ($1, 0, 1)
     ON CONFLICT (user_id) DO UPDATE SET last_seq = event_sequence.last_seq, routes_version = event_sequence.routes_version + 1
     RETURNING last_seq`,
    [userId],
  );
  return rows[0].last_seq;
}

/** The user's latest event seq (0 before the first). */
export async function latestSeq(q: Queryable, userId: string): Promise<number> {
  const { rows } = await q.query<{ last_seq: number }>(
    'events.latest_seq',
    'SELECT last_seq FROM event_sequence WHERE user_id = $1',
    [userId],
  );
  return rows[0]?.last_seq ?? 0;
}

/** Stored events of a user after `afterSeq`, in order (WebSocket `last_seq` replay). */
export async function eventsAfter(
  q: Queryable,
  userId: string,
  afterSeq: number,
  limit = 1000,
): Promise<StoredEvent[]> {
  const { rows } = await q.query<OutboxRow>(
    'events.after',
    `SELECT * FROM event_outbox WHERE user_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
    [userId, afterSeq, limit],
  );
  return rows.map(toStored);
}

/** An event as receivers get it (WebSocket message, webhook body): the body's fields and the envelope. */
export function toDelivered(e: StoredEvent): EventBody & Omit<EventEnvelope, 'user_id'> {
  return { ...e.body, event_id: e.event_id, seq: e.seq, occurred_at: e.occurred_at };
}

/** The Pub/Sub message of one event; attributes carry what receivers filter on. */
export function toMessage(e: StoredEvent): { data: unknown; attributes: Record<string, string> } {
  const { written: _, ...data } = e;
  const attributes: Record<string, string> = { user_id: e.user_id, seq: String(e.seq), event_type: e.body.type };
  if (e.origin_client_id) attributes.origin_client_id = e.origin_client_id;
  for (const [k, v] of Object.entries(e.trace_context ?? {})) attributes[k] = v;
  return { data, attributes };
}

export interface EventPublisher {
  /** The routes version at which the user has no live instance, if known (appendEvents' `quiet`). */
  quiet?(userId: string): number | undefined;
  /**
   * Publishes these (just committed) events, waiting at most PUBLISH_WAIT_MS: with Pub/Sub down
   * the caller still answers promptly; the publish goes on in the background and whatever
   * stays unpublished is left to the sweep.
   */
  publish(events: StoredEvent[]): Promise<void>;
  /** Republishes every unpublished row older than `minAgeMs`; returns how many went out. */
  republishPending(minAgeMs?: number): Promise<number>;
}

/** How long a publish after commit is waited for (the Pub/Sub client retries for up to 60 s). */
const PUBLISH_WAIT_MS = 1000;

/**
 * The live instances a user's events must reach: those holding a connection of the user. Each
 * gets the events on its own topic (lib/fanout); a user nobody listens to costs no message.
 * `version`: the user's routes version the events were written at (RouteCache), when known.
 */
export type EventRoutes = (userId: string, version?: number) => Promise<string[]>;

export function createEventPublisher(deps: {
  db: Queryable;
  bus: Bus;
  topic: string;
  log: Logger;
  routes: EventRoutes;
  quiet?: EventPublisher['quiet'];
}): EventPublisher {
  const { db, bus, topic, log, routes } = deps;

  /** Each user's instances, or the error that kept us from learning them (the sweep retries). */
  async function route(events: StoredEvent[]): Promise<Map<string, string[] | Error>> {
    const versions = new Map(events.map((e) => [e.user_id, e.written?.routesVersion]));
    const users = [...versions.keys()];
    const asError = (err: unknown) => (err instanceof Error ? err : new Error(String(err)));
    const found = await Promise.all(users.map((u) => routes(u, versions.get(u)).catch(asError)));
    return new Map(users.map((u, i) => [u, found[i]]));
  }

  /**
   * Publishes in seq order: the client keeps per-ordering-key (user) order on each instance's
   * topic even with the publishes in flight together. An event is published once every instance
   * of its user has it (or none listens). Returns how many went out; the rest stay for the sweep.
   */
  async function publishAll(all: StoredEvent[]): Promise<number> {
    // Written published: no instance held the user at the version the append saw.
    const events = all.filter((e) => !e.written?.published);
    if (!events.length) return 0;
    const targets = await route(events);
    const results = await Promise.allSettled(
      events.map((e) => {
        const to = targets.get(e.user_id)!;
        if (to instanceof Error) return Promise.reject(to);
        return publishToInstances(bus, topic, to, { ...toMessage(e), orderingKey: e.user_id });
      }),
    );
    const sentEvents = events.filter((_, i) => results[i].status === 'fulfilled');
    const sent = sentEvents.map((e) => e.event_id);
    const failed = results.find((r) => r.status === 'rejected') as PromiseRejectedResult | undefined;
    if (failed)
      log.warn(
        { err: String(failed.reason), unpublished: events.length - sent.length },
        'event publish failed; the sweep will retry',
      );
    // The oldest occurred_at (created_at, to the millisecond) confines the update to the days'
    // partitions that hold the events (decision 0010), not every partition's key index.
    if (sent.length) {
      const since = new Date(Math.min(...sentEvents.map((e) => Date.parse(e.occurred_at)))).toISOString();
      await db.query(
        'events.mark_published',
        'UPDATE event_outbox SET published_at = now() WHERE id = ANY($1::uuid[]) AND created_at >= $2::timestamptz',
        [sent, since],
      );
    }
    return sent.length;
  }

  return {
    quiet: deps.quiet,
    async publish(events) {
      if (events.every((e) => e.written?.published)) return;
      const done = publishAll(events).catch((err) =>
        log.warn({ err: String(err) }, 'event publish failed; the sweep will retry'),
      );
      await Promise.race([done, new Promise((r) => setTimeout(r, PUBLISH_WAIT_MS).unref())]);
    },
    async republishPending(minAgeMs = 5000) {
      const { rows } = await db.query<OutboxRow>(
        'events.pending',
        `SELECT * FROM event_outbox WHERE published_at IS NULL AND created_at < clock_timestamp() - ($1 || ' milliseconds')::interval
         ORDER BY user_id, seq LIMIT 1000`,
        [String(minAgeMs)],
      );
      return publishAll(rows.map(toStored));
    },
  };
}

/**
 * Unpublished outbox rows and the age of the oldest (s; 0 when none): one read of the partial
 * index on unpublished rows; the outbox metrics (lib/telemetry/metrics.ts).
 */
export async function outboxBacklog(db: Queryable): Promise<{ unpublished: number; oldestAgeSeconds: number }> {
  const { rows } = await db.query<{ unpublished: number; age: number | null }>(
    'events.backlog',
    `SELECT count(*)::int AS unpublished, extract(epoch FROM clock_timestamp() - min(created_at))::float8 AS age
       FROM event_outbox WHERE published_at IS NULL`,
  );
  return { unpublished: rows[0].unpublished, oldestAgeSeconds: rows[0].age ?? 0 };
}
