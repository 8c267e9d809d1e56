// In-process stand-in for Firestore coordination, used by the local stack only when gcloud is
// missing. Same lease rules as lib/adapters/coordination (imported from there); a single process needs no
// transactions because each call reads and writes its entry without awaiting in between.
import {
  acquiredLease,
  beatLease,
  releasedLease,
  takenOverLease,
  toLease,
  type Coordination,
  type LeaseState,
} from '../../lib/adapters/coordination';

export function createMemoryCoordination(): Coordination {
  const leases = new Map<string, LeaseState>();
  // userId → connectionId → where and until when
  const presence = new Map<string, Map<string, { instanceId: string; expiresAt: number }>>();
  const marks = new Map<string, number>(); // instanceId → expiresAt

  const change = (key: string, next: LeaseState | null) => {
    if (next) leases.set(key, next);
    return toLease(key, next, Date.now());
  };
  const alive = (userId: string) => {
    const now = Date.now();
    return [...(presence.get(userId)?.values() ?? [])].filter((p) => p.expiresAt > now);
  };
  const countAlive = (userId: string) => alive(userId).length;

  return {
    async acquire(key, owner, ttlMs) {
      return change(key, acquiredLease(leases.get(key), owner, ttlMs, Date.now()));
    },
    async takeOver(key, owner, ttlMs) {
      return change(key, takenOverLease(leases.get(key), owner, ttlMs, Date.now()))!;
    },
    async release(key, owner) {
      change(key, releasedLease(leases.get(key), owner, Date.now()));
    },
    async get(key) {
      return toLease(key, leases.get(key), Date.now());
    },
    async addPresence(userId, connectionId, instanceId, ttlMs) {
      if (!presence.has(userId)) presence.set(userId, new Map());
      presence.get(userId)!.set(connectionId, { instanceId, expiresAt: Date.now() + ttlMs });
    },
    async removePresence(userId, connectionId) {
      presence.get(userId)?.delete(connectionId);
      return countAlive(userId);
    },
    async countPresence(userId) {
      return countAlive(userId);
    },
    async presenceInstances(userId) {
      return [...new Set(alive(userId).map((p) => p.instanceId))];
    },
    async heartbeat({ owner, instanceTtlMs, leaseKeys, leaseTtlMs, presence: present, presenceTtlMs }) {
      const now = Date.now();
      if (instanceTtlMs !== null) marks.set(owner, now + instanceTtlMs);
      for (const p of present) await this.addPresence(p.userId, p.connectionId, owner, presenceTtlMs);
      return new Map(leaseKeys.map((k) => [k, change(k, beatLease(leases.get(k), owner, leaseTtlMs, now))]));
    },
    async unmarkInstance(instanceId) {
      marks.delete(instanceId);
    },
    async markedInstances() {
      const now = Date.now();
      return [...marks].filter(([, expiresAt]) => expiresAt > now).map(([id]) => id);
    },
    async close() {
      leases.clear();
      presence.clear();
      marks.clear();
    },
  };
}
