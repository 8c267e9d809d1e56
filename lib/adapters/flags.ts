// Feature flags served from Firestore so they change without a deploy. Result for a user:
// code defaults ← `feature_flags/defaults`.flags ← `feature_flags_users/{userId}`.flags,
// cached per user for cacheTtlMs.
import type { Firestore } from '@google-cloud/firestore';
import { LRUCache } from 'lru-cache';
import { createFirestore } from './coordination';

export type FlagValue = boolean | number | string;
export type Flags = Record<string, FlagValue>;

export interface FeatureFlags {
  forUser(userId: string): Promise<Flags>;
  /** Closes the Firestore client only if this module created it. */
  close(): Promise<void>;
}

const DEFAULT_CACHE_TTL_MS = 30_000;
// Bounds memory on an instance serving many users; the least recently used entry goes first.
const MAX_CACHED_USERS = 10_000;

export function createFeatureFlags(
  opts: ({ firestore: Firestore } | { projectId: string; emulatorHost?: string }) & {
    cacheTtlMs?: number;
    defaults?: Flags;
  },
): FeatureFlags {
  const owned = !('firestore' in opts);
  const db = 'firestore' in opts ? opts.firestore : createFirestore(opts);
  const ttl = opts.cacheTtlMs ?? DEFAULT_CACHE_TTL_MS;
  // fetch() shares one read between concurrent callers; a failed read is not cached.
  const cache = new LRUCache<string, Flags>({
    max: MAX_CACHED_USERS,
    ttl: Math.max(1, ttl),
    fetchMethod: (userId) => load(userId),
  });

  const load = async (userId: string): Promise<Flags> => {
    const [defaults, user] = await db.getAll(
      db.doc('feature_flags/defaults'),
      db.collection('feature_flags_users').doc(userId),
    );
    return { ...opts.defaults, ...flagsOf(defaults.get('flags')), ...flagsOf(user.get('flags')) };
  };

  return {
    async forUser(userId) {
      return (await cache.fetch(userId))!;
    },
    async close() {
      if (owned) await db.terminate();
    },
  };
}

/** Keeps only the values a flag may hold; anything else in the document is ignored. */
function flagsOf(value: unknown): Flags {
  if (!value || typeof value !== 'object') return {};
  return Object.fromEntries(
    Object.entries(value).filter(([, v]) => typeof v === 'boolean' || typeof v === 'number' || typeof v === 'string'),
  ) as Flags;
}
