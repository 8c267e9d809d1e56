// In-process stand-in for Firestore coordination, used by the local stack only when gcloud is
// missing. Same lease rules as lib/adapters/coordination (imported from there); a single process needs no
// transactions because each call reads and writes its entry without awaiting in between.
import {
  acquiredLease,
  releasedLease,
  renewedLease,
  takenOverLease,
  toLease,
  type Coordination,
  type LeaseState,
} from '../../lib/adapters/coordination';

export function createMemoryCoordination(): Coordination {
  const leases = new Map<string, LeaseState>();
  const presence = new Map<string, Map<string, number>>(); // userId → connectionId → expiresAt

  const change = (key: string, next: LeaseState | null) => {
    if (next) leases.set(key, next);
    return toLease(key, next, Date.now());
  };
  const countAlive = (userId: string) => {
    const now = Date.now();
    return [...(presence.get(userId)?.values() ?? [])].filter((expiresAt) => expiresAt > now).length;
  };

  return {
    async acquire(key, owner, ttlMs) {
      return change(key, acquiredLease(leases.get(key), owner, ttlMs, Date.now()));
    },
    async takeOver(key, owner, ttlMs) {
      return change(key, takenOverLease(leases.get(key), owner, ttlMs, Date.now()))!;
    },
    async renew(key, owner, ttlMs) {
      return change(key, renewedLease(leases.get(key), owner, ttlMs, Date.now()));
    },
    async release(key, owner) {
      change(key, releasedLease(leases.get(key), owner, Date.now()));
    },
    async get(key) {
      return toLease(key, leases.get(key), Date.now());
    },
    async addPresence(userId, connectionId, _instanceId, ttlMs) {
      if (!presence.has(userId)) presence.set(userId, new Map());
      presence.get(userId)!.set(connectionId, Date.now() + ttlMs);
    },
    async removePresence(userId, connectionId) {
      presence.get(userId)?.delete(connectionId);
      return countAlive(userId);
    },
    async countPresence(userId) {
      return countAlive(userId);
    },
    async close() {
      leases.clear();
      presence.clear();
    },
  };
}
