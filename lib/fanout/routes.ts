// The targeted fan-out of events to live instances (lib/fanout: routes.ts routing and presence
// notices, topics.ts the instances' own topics, liveness.ts the instance document, its liveness and
// the clean-up of dead instances' topics; docs/decisions/0008 and 0009).
// The outbox is the guarantee: a connection's replay, gap fill and periodic catch-up
// (run-services/live/event-stream.ts) bring every committed event. The bus is the fast path:
// each live instance reads a Pub/Sub topic of its own, and an event goes only to the topics of
// the instances holding a connection of its user. Presence (Firestore) is the routing table.
//
// This file: an instance's presence (InstancePresence: join, leave, the notices), and which other
// instances hold connections of a user, as an instance knows it (the routes of the events it
// produces itself: progress of its takes, their starts and stops). Read from presence when
// unknown or older than REFRESH_MS, and kept current by the presence notices other instances
// send when they gain or lose a user. A stale entry costs a message to an
// instance that no longer listens; one that misses an instance which just connected is covered
// there by the hello's replay, the gap fill and the catch-up. And the functions' cache of the same
// routes, trusted while the user's routes version stands (RouteCache, at the end).
import type { Bus, BusMessage } from '../adapters/bus';
import type { InstanceRegistry } from './liveness';
import { publishToInstances } from './topics';
import type { Logger } from '../telemetry/log';

/** How long a read of presence is trusted between notices. */
export const REFRESH_MS = 30_000;

interface Entry {
  instances: Set<string>;
  readAt: number;
  reading: Promise<Set<string>> | null;
  /** Notices that came in while a read was under way: newer than what it returns. */
  during: [instance: string, holds: boolean][];
}

export class RemoteListeners {
  private readonly known = new Map<string, Entry>();

  constructor(
    private readonly self: string,
    private readonly readPresence: (userId: string) => Promise<string[]>,
    private readonly refreshMs = REFRESH_MS,
  ) {}

  /** The other instances holding the user (a routes function for createEventPublisher). */
  async of(userId: string): Promise<string[]> {
    const entry = this.known.get(userId);
    if (entry && !entry.reading && Date.now() - entry.readAt < this.refreshMs) return [...entry.instances];
    return [...(await this.refresh(userId))];
  }

  /** Reads presence now (a hello: the instances to tell about the new connection). */
  refresh(userId: string): Promise<Set<string>> {
    let entry = this.known.get(userId);
    if (!entry) this.known.set(userId, (entry = { instances: new Set(), readAt: 0, reading: null, during: [] }));
    if (entry.reading) return entry.reading;
    const e = entry;
    e.during = [];
    e.reading = this.readPresence(userId).then(
      (ids) => {
        e.instances = new Set(ids.filter((i) => i !== this.self));
        for (const [instance, holds] of e.during) this.apply(e, instance, holds);
        e.readAt = Date.now();
        e.reading = null;
        return e.instances;
      },
      (err: unknown) => {
        e.reading = null;
        throw err;
      },
    );
    return e.reading;
  }

  /** A presence notice: `instance` now holds (or no longer holds) a connection of the user. */
  noticed(instance: string, userId: string, holds: boolean): void {
    const entry = this.known.get(userId);
    if (!entry || instance === this.self) return;
    this.apply(entry, instance, holds);
    if (entry.reading) entry.during.push([instance, holds]);
  }

  /** Forgets users not looked at for a while (they are read again when needed). */
  prune(now = Date.now()): void {
    for (const [userId, e] of this.known) {
      if (!e.reading && now - e.readAt > 2 * this.refreshMs) this.known.delete(userId);
    }
  }

  private apply(entry: Entry, instance: string, holds: boolean): void {
    if (holds) entry.instances.add(instance);
    else entry.instances.delete(instance);
  }
}

/**
 * Sent to the other instances holding a user when this one gains or loses that user's
 * connections: `holds` keeps their routes current (RemoteListeners); `online` false means the
 * user has no connection left anywhere (detached takes start their grace), true that one just
 * opened (pending stops are off), null neither.
 */
export interface PresenceNotice {
  control: 'presence';
  user_id: string;
  instance: string;
  holds: boolean;
  online: boolean | null;
  min_grace_seconds: number;
}

/** Publishes a notice to the topics of `to`; best effort (heartbeats and REFRESH_MS re-check). */
export async function sendPresenceNotice(
  bus: Pick<Bus, 'publish'>,
  topic: string,
  to: Iterable<string>,
  notice: Omit<PresenceNotice, 'control'>,
  log: Logger,
): Promise<void> {
  const attributes = { user_id: notice.user_id, control: 'presence' };
  const data: PresenceNotice = { control: 'presence', ...notice };
  await publishToInstances(bus, topic, to, { data, attributes, orderingKey: notice.user_id }).catch((err) =>
    log.warn({ err: (err as Error).message }, 'could not publish a presence notice; heartbeats will notice'),
  );
}

/** The presence notice a bus message carries (null: an event; 'ignored': ours or malformed). */
export function presenceNoticeOf(m: BusMessage, self: string): PresenceNotice | 'ignored' | null {
  if (m.attributes.control !== 'presence') return null;
  const data = m.data as Partial<PresenceNotice>;
  if (data.instance === self || typeof data.user_id !== 'string' || typeof data.instance !== 'string') return 'ignored';
  return data as PresenceNotice;
}

/**
 * An instance's side of presence: its connections in the routing table (the instance document,
 * liveness.ts), the routes of the events it produces (RemoteListeners), and the notices it sends
 * and receives when it gains or loses a user.
 */
export class InstancePresence {
  private readonly listeners: RemoteListeners;

  constructor(
    private readonly d: {
      self: string;
      registry: Pick<InstanceRegistry, 'addPresence' | 'removePresence' | 'presenceInstances'>;
      bus: Pick<Bus, 'publish'>;
      topic: string;
      log: Logger;
    },
  ) {
    this.listeners = new RemoteListeners(d.self, (userId) => d.registry.presenceInstances(userId));
  }

  /** The other instances holding the user: where its events produced here go (createEventPublisher's routes). */
  readonly routes = (userId: string): Promise<string[]> => this.listeners.of(userId);

  /** The connection joins the routing table; a failed write is logged (the catch-up covers it). */
  join(userId: string, connectionId: string): Promise<void> {
    return this.d.registry
      .addPresence(userId, connectionId, this.d.self)
      .catch((err) => this.d.log.warn({ err: (err as Error).message }, 'presence write failed'));
  }

  /** The connection leaves the routing table; how many of the user's remain on live instances (null: unknown). */
  leave(userId: string, connectionId: string): Promise<number | null> {
    return this.d.registry.removePresence(userId, connectionId, this.d.self).catch(() => null);
  }

  /** Tells the instances already holding the user that this one does too: their events now come here. */
  async announce(userId: string): Promise<void> {
    const others = await this.listeners.refresh(userId).catch(() => new Set<string>());
    await this.notify(others, userId, true, true);
  }

  /**
   * Tells the instances holding the user that this one no longer does; `online` false: nobody
   * does (their detached takes start a grace of at least `minGrace` seconds), null: unknown.
   */
  async letGo(userId: string, online: false | null, minGrace = 0): Promise<void> {
    const others = await this.listeners.of(userId).catch(() => []);
    await this.notify(others, userId, false, online, minGrace);
  }

  /** A bus message: a presence notice (kept by the routes), null for an event, 'ignored' for ours or a malformed one. */
  received(m: BusMessage): PresenceNotice | 'ignored' | null {
    const notice = presenceNoticeOf(m, this.d.self);
    if (notice && notice !== 'ignored') this.listeners.noticed(notice.instance, notice.user_id, notice.holds !== false);
    return notice;
  }

  /** Forgets routes not looked at for a while. */
  prune(): void {
    this.listeners.prune();
  }

  private notify(to: Iterable<string>, userId: string, holds: boolean, online: boolean | null, minGrace = 0) {
    const notice = { user_id: userId, instance: this.d.self, holds, online, min_grace_seconds: minGrace };
    return sendPresenceNotice(this.d.bus, this.d.topic, to, notice, this.d.log);
  }
}

// The functions' side: an api instance's routes (the live instances holding a user, read from
// presence), cached per user with the user's routes version (event_sequence.routes_version, docs/decisions/0011). A
// hello bumps the version after its presence write, in the statement that fixes its starting
// point; a transaction appending the user's events reads the version under the same row lock.
// So a route read after a version committed knows every tab whose hello bumped up to it: while the
// version a commit sees is the cached one, the cached routes hold (no presence read), and a tab
// whose hello comes later either lies behind this commit (its replay) or bumps past the entry.
// A stale entry (a tab gone since) costs a message nobody reads, for at most ttlMs.

interface CachedRoutes {
  version: number;
  instances: string[];
  readAt: number;
}

/** Users kept at most: an instance serving more forgets the least recently read first. */
const MAX_USERS = 10_000;

export class RouteCache {
  private readonly known = new Map<string, CachedRoutes>();

  constructor(
    private readonly readPresence: (userId: string) => Promise<string[]>,
    private readonly ttlMs: number,
  ) {}

  /** The user's instances as of `version` (the one the events were written at); without one, presence read now. */
  async of(userId: string, version?: number): Promise<string[]> {
    if (version === undefined) return this.readPresence(userId);
    const cached = this.fresh(userId, version);
    if (cached) return cached.instances;
    const instances = await this.readPresence(userId);
    const entry = this.known.get(userId);
    // A slower read of an older version does not replace a newer one.
    if (!entry || entry.version <= version) {
      this.known.delete(userId);
      this.known.set(userId, { version, instances, readAt: Date.now() });
      if (this.known.size > MAX_USERS) this.known.delete(this.known.keys().next().value!);
    }
    return instances;
  }

  /** The version at which the user is known to have no instance (its events need no publish), if any. */
  quiet(userId: string): number | undefined {
    const entry = this.known.get(userId);
    return entry && !entry.instances.length && this.fresh(userId, entry.version) ? entry.version : undefined;
  }

  private fresh(userId: string, version: number): CachedRoutes | undefined {
    const entry = this.known.get(userId);
    // guard: route-cache-version | remove: entry.version === version && | test: test/live/route-cache.test.ts :: connects after its routes were cached
    return entry && entry.version === version && Date.now() - entry.readAt < this.ttlMs ? entry : undefined;
  }
}
