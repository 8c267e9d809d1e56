// In-process stand-in for Firestore coordination, used by the local stack only when gcloud is
// missing. Same lease rules as lib/adapters/coordination (imported from there), and the same
// shape: one entry per instance (its liveness and connections), lease entries written only when
// ownership changes. A single process needs no transactions because each call reads and writes
// its entries without awaiting in between.
import {
  acquiredLease,
  beatLease,
  liveState,
  releasedLease,
  takenOverLease,
  toLease,
  type Coordination,
  type LeaseState,
} from '../../lib/adapters/coordination';

interface InstanceEntry {
  expiresAt: number;
  /** connection id → user id */
  connections: Map<string, string>;
}

export function createMemoryCoordination(): Coordination {
  const leases = new Map<string, LeaseState>();
  const instances = new Map<string, InstanceEntry>();
  let writes = 0;
  let heartbeatWrites = 0;

  const aliveUntil = (instanceId: string | undefined) => instances.get(instanceId ?? '')?.expiresAt ?? 0;
  const current = (key: string) => {
    const state = leases.get(key);
    return liveState(state, aliveUntil(state?.owner));
  };
  const change = (key: string, next: LeaseState | null) => {
    if (next) {
      leases.set(key, next);
      writes++;
    }
    return toLease(key, next, Date.now());
  };
  const instance = (id: string) => {
    if (!instances.has(id)) instances.set(id, { expiresAt: 0, connections: new Map() });
    return instances.get(id)!;
  };
  const holding = (userId: string) => {
    const now = Date.now();
    return [...instances]
      .filter(([, i]) => i.expiresAt > now)
      .map(([instanceId, i]) => ({ instanceId, count: [...i.connections.values()].filter((u) => u === userId).length }))
      .filter((h) => h.count > 0);
  };
  const countAlive = (userId: string) => holding(userId).reduce((n, h) => n + h.count, 0);

  return {
    get writes() {
      return writes;
    },
    get heartbeatWrites() {
      return heartbeatWrites;
    },
    async acquire(key, owner, ttlMs) {
      return change(key, acquiredLease(current(key), owner, ttlMs, Date.now()));
    },
    async takeOver(key, owner, ttlMs) {
      return change(key, takenOverLease(current(key), owner, ttlMs, Date.now()))!;
    },
    async release(key, owner) {
      change(key, releasedLease(current(key), owner, Date.now()));
    },
    async get(key) {
      return toLease(key, current(key), Date.now());
    },
    async addPresence(userId, connectionId, instanceId) {
      instance(instanceId).connections.set(connectionId, userId);
      writes++;
    },
    async removePresence(userId, connectionId, instanceId) {
      instances.get(instanceId)?.connections.delete(connectionId);
      writes++;
      return countAlive(userId);
    },
    async countPresence(userId) {
      return countAlive(userId);
    },
    async presenceInstances(userId) {
      return holding(userId).map((h) => h.instanceId);
    },
    async heartbeat({ owner, ttlMs, leaseKeys }) {
      const now = Date.now();
      instance(owner).expiresAt = now + ttlMs;
      const before = writes++;
      const decided = new Map(
        leaseKeys.map((k) => {
          const state = leases.get(k);
          const alive = state?.owner === owner ? now + ttlMs : aliveUntil(state?.owner);
          const { next, write } = beatLease(liveState(state, alive), owner, ttlMs, now);
          return [k, write ? change(k, next) : toLease(k, next, now)];
        }),
      );
      heartbeatWrites += writes - before;
      return decided;
    },
    async unmarkInstance(instanceId) {
      instances.delete(instanceId);
      writes++;
    },
    async markedInstances() {
      const now = Date.now();
      return [...instances].filter(([, i]) => i.expiresAt > now).map(([id]) => id);
    },
    async close() {
      leases.clear();
      instances.clear();
    },
  };
}
