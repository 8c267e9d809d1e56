// An api instance's routes (the live instances holding a user, read from presence), cached per
// user with the user's routes version (event_sequence.routes_version, docs/decisions/0011). A
// hello bumps the version after its presence write, in the statement that fixes its starting
// point; a transaction appending the user's events reads the version under the same row lock.
// So a route read after a version committed knows every tab whose hello bumped up to it: while the
// version a commit sees is the cached one, the cached routes hold (no presence read), and a tab
// whose hello comes later either lies behind this commit (its replay) or bumps past the entry.
// A stale entry (a tab gone since) costs a message nobody reads, for at most ttlMs.

interface Entry {
  version: number;
  instances: string[];
  readAt: number;
}

/** Users kept at most: an instance serving more forgets the least recently read first. */
const MAX_USERS = 10_000;

export class RouteCache {
  private readonly known = new Map<string, Entry>();

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

  private fresh(userId: string, version: number): Entry | undefined {
    const entry = this.known.get(userId);
    // guard: route-cache-version | remove: entry.version === version && | test: test/live/route-cache.test.ts :: connects after its routes were cached
    return entry && entry.version === version && Date.now() - entry.readAt < this.ttlMs ? entry : undefined;
  }
}
