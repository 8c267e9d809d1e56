// Live-session coordination across Cloud Run instances, in Firestore: exclusive leases with a
// heartbeat (who owns a live recording) and presence (which connections a user has open).
// Exclusivity comes from Firestore transactions. Expiry is judged by the caller's clock, so
// TTLs should be far above the clock skew between instances (seconds, not milliseconds).
// Every lease and presence document carries an `expires_at` Timestamp for the TTL policy.
import {
  Firestore,
  Timestamp,
  type DocumentData,
  type DocumentReference,
  type Transaction,
} from '@google-cloud/firestore';
import { emulatorAuth } from './google-auth';

export interface Lease {
  key: string;
  owner: string;
  expiresAt: Date;
  /** Grows by one whenever ownership changes hands; a fencing token. */
  epoch: number;
}

export interface Coordination {
  /** Succeeds when the lease is free, expired, or already held by `owner`. */
  acquire(key: string, owner: string, ttlMs: number): Promise<Lease | null>;
  /** Forced takeover (a resume on another instance): always succeeds and bumps the epoch. */
  takeOver(key: string, owner: string, ttlMs: number): Promise<Lease>;
  /** Only if still ours. */
  release(key: string, owner: string): Promise<void>;
  /** The current, unexpired lease. */
  get(key: string): Promise<Lease | null>;
  addPresence(userId: string, connectionId: string, instanceId: string, ttlMs: number): Promise<void>;
  /** Returns how many unexpired connections remain. */
  removePresence(userId: string, connectionId: string): Promise<number>;
  countPresence(userId: string): Promise<number>;
  /** The instances holding an unexpired connection of the user: where the user's events must go. */
  presenceInstances(userId: string): Promise<string[]>;
  /**
   * An instance's heartbeat, one commit per HEARTBEAT_DOCS documents (at least one): marks the
   * instance alive (lib/fanout/liveness.ts: it owns a topic while marked), renews every lease it
   * holds (a lapsed or released lease nobody took is taken again) and refreshes its connections'
   * presence. Returns each key's lease, null where another owner holds it now.
   */
  heartbeat(beat: Heartbeat): Promise<Map<string, Lease | null>>;
  /** A clean shutdown's end: the instance's mark goes. */
  unmarkInstance(instanceId: string): Promise<void>;
  /** The instances whose mark has not lapsed. */
  markedInstances(): Promise<string[]>;
  close(): Promise<void>;
}

export interface Heartbeat {
  /** The instance: its leases' owner, and the one marked alive for instanceTtlMs more. */
  owner: string;
  /** null: the mark is not due this beat (it is renewed every third of its lifetime). */
  instanceTtlMs: number | null;
  leaseKeys: string[];
  leaseTtlMs: number;
  presence: { userId: string; connectionId: string }[];
  presenceTtlMs: number;
}

/** A lease document's content; `owner` is empty after a release (the epoch is kept for fencing). */
export interface LeaseState {
  owner: string;
  expiresAt: number;
  epoch: number;
}

// The lease rules, shared with the in-process substitute (emulators/fallback).

export function acquiredLease(
  current: LeaseState | undefined,
  owner: string,
  ttlMs: number,
  now: number,
): LeaseState | null {
  if (current?.owner && current.owner !== owner && current.expiresAt > now) return null;
  const sameOwner = current?.owner === owner;
  return { owner, expiresAt: now + ttlMs, epoch: sameOwner ? current!.epoch : (current?.epoch ?? 0) + 1 };
}

export function takenOverLease(current: LeaseState | undefined, owner: string, ttlMs: number, now: number): LeaseState {
  return { owner, expiresAt: now + ttlMs, epoch: (current?.epoch ?? 0) + 1 };
}

/**
 * A holder whose heartbeat came late may still renew while nobody else took the lease: the
 * owner field only changes hands through acquire/takeOver, so an unchanged owner proves it.
 */
export function renewedLease(
  current: LeaseState | undefined,
  owner: string,
  ttlMs: number,
  now: number,
): LeaseState | null {
  if (!current || current.owner !== owner) return null;
  return { owner, expiresAt: now + ttlMs, epoch: current.epoch };
}

/** The heartbeat's rule for one lease: renewed while ours, else taken again if free or lapsed. */
export function beatLease(current: LeaseState | undefined, owner: string, ttlMs: number, now: number) {
  return renewedLease(current, owner, ttlMs, now) ?? acquiredLease(current, owner, ttlMs, now);
}

export function releasedLease(current: LeaseState | undefined, owner: string, now: number): LeaseState | null {
  if (!current || current.owner !== owner) return null;
  return { owner: '', expiresAt: now, epoch: current.epoch };
}

export function toLease(key: string, state: LeaseState | null | undefined, now: number): Lease | null {
  if (!state?.owner || state.expiresAt <= now) return null;
  return { key, owner: state.owner, expiresAt: new Date(state.expiresAt), epoch: state.epoch };
}

/**
 * A Firestore client, pointed at the emulator when a host is given or FIRESTORE_EMULATOR_HOST is
 * set (the client lets that variable win over the host option).
 */
export function createFirestore(opts: { projectId: string; emulatorHost?: string }): Firestore {
  const emulatorHost = opts.emulatorHost ?? process.env.FIRESTORE_EMULATOR_HOST;
  return new Firestore({
    projectId: opts.projectId,
    ...(emulatorHost && {
      host: emulatorHost,
      ssl: false,
      authClient: emulatorAuth(),
    }),
  });
}

/** Documents per heartbeat commit: Firestore's documented bound on writes per commit. */
export const HEARTBEAT_DOCS = 500;

// Firestore document ids may not contain '/' nor be '.' or '..'.
const docId = (s: string) => encodeURIComponent(s).replace(/\./g, '%2E');

export function createCoordination(opts: {
  projectId: string;
  emulatorHost?: string;
  collectionPrefix?: string;
}): Coordination {
  const db = createFirestore(opts);
  const prefix = opts.collectionPrefix ?? '';
  const leases = db.collection(`${prefix}leases`);
  const connections = (userId: string) =>
    db.collection(`${prefix}presence`).doc(docId(userId)).collection('presence_connections');
  const instances = db.collection(`${prefix}instances`);

  const readState = (data: DocumentData | undefined): LeaseState | undefined =>
    data && {
      owner: data.owner as string,
      expiresAt: (data.expires_at as Timestamp).toMillis(),
      epoch: data.epoch as number,
    };

  const setLease = (tx: Transaction, ref: DocumentReference, key: string, next: LeaseState) =>
    tx.set(ref, { key, owner: next.owner, epoch: next.epoch, expires_at: Timestamp.fromMillis(next.expiresAt) });
  const markOf = (instanceId: string, expiresAt: number) => ({
    instance_id: instanceId,
    expires_at: Timestamp.fromMillis(expiresAt),
  });
  const presenceDoc = (userId: string, connectionId: string, instanceId: string, expiresAt: number) =>
    [
      connections(userId).doc(docId(connectionId)),
      {
        user_id: userId,
        connection_id: connectionId,
        instance_id: instanceId,
        expires_at: Timestamp.fromMillis(expiresAt),
      },
    ] as const;
  // Racing instances contend on a document; the emulator aborts the losers, which retry.
  const TX = { maxAttempts: 20 };

  /** Reads, decides and writes one lease document in a transaction. */
  const change = <T extends LeaseState | null>(
    key: string,
    decide: (current: LeaseState | undefined, now: number) => T,
  ) =>
    db.runTransaction(async (tx) => {
      const ref: DocumentReference = leases.doc(docId(key));
      const current = readState((await tx.get(ref)).data());
      const now = Date.now();
      const next = decide(current, now);
      if (next) setLease(tx, ref, key, next);
      return { next, now };
    }, TX);

  const countAlive = async (userId: string) => {
    const snap = await connections(userId).where('expires_at', '>', Timestamp.now()).count().get();
    return snap.data().count;
  };

  return {
    async acquire(key, owner, ttlMs) {
      const { next, now } = await change(key, (cur, now) => acquiredLease(cur, owner, ttlMs, now));
      return toLease(key, next, now);
    },
    async takeOver(key, owner, ttlMs) {
      const { next, now } = await change(key, (cur, now) => takenOverLease(cur, owner, ttlMs, now));
      return toLease(key, next, now)!;
    },
    async release(key, owner) {
      await change(key, (cur, now) => releasedLease(cur, owner, now));
    },
    async get(key) {
      const snap = await leases.doc(docId(key)).get();
      return toLease(key, readState(snap.data()), Date.now());
    },
    async addPresence(userId, connectionId, instanceId, ttlMs) {
      const [ref, data] = presenceDoc(userId, connectionId, instanceId, Date.now() + ttlMs);
      await ref.set(data);
    },
    async removePresence(userId, connectionId) {
      await connections(userId).doc(docId(connectionId)).delete();
      return countAlive(userId);
    },
    countPresence: countAlive,
    async presenceInstances(userId) {
      const snap = await connections(userId).where('expires_at', '>', Timestamp.now()).select('instance_id').get();
      return [...new Set(snap.docs.map((d) => d.get('instance_id') as string))];
    },
    async heartbeat({ owner, instanceTtlMs, leaseKeys, leaseTtlMs, presence, presenceTtlMs }) {
      const keys = [...new Set(leaseKeys)];
      // A transaction per HEARTBEAT_DOCS documents (one for an instance of a few hundred takes): a
      // batched read of its leases, then one commit of their writes and of presence. Each lease is
      // decided by the same rule as alone, on the state the commit is fenced to.
      const beat = async (keys: string[], presence: Heartbeat['presence'], mark: boolean) => {
        const { decided, now } = await db.runTransaction(async (tx) => {
          const refs = keys.map((k) => leases.doc(docId(k)));
          const snaps = refs.length ? await tx.getAll(...refs) : [];
          const now = Date.now();
          const decided = snaps.map((snap, i) => {
            const next = beatLease(readState(snap.data()), owner, leaseTtlMs, now);
            if (next) setLease(tx, refs[i], keys[i], next);
            return next;
          });
          for (const p of presence) tx.set(...presenceDoc(p.userId, p.connectionId, owner, now + presenceTtlMs));
          // Renewed with every beat, and again after a lapse (Firestore out of reach): then it owns a topic again.
          // guard: live-instance-mark-renewed | remove: if (mark) tx.set(instances.doc(docId(owner)), markOf(owner, now + instanceTtlMs!)); | test: test/live/sweep-order.test.ts :: mark itself again
          if (mark) tx.set(instances.doc(docId(owner)), markOf(owner, now + instanceTtlMs!));
          return { decided, now };
        }, TX);
        return keys.map((k, i) => [k, toLease(k, decided[i], now)] as const);
      };
      const commits = [];
      // The mark first, then the leases, then presence: the mark rides in the first commit.
      const total = 1 + keys.length + presence.length;
      for (let i = 0; i < total; i += HEARTBEAT_DOCS) {
        const part = <T>(list: T[], at: number) =>
          list.slice(Math.max(0, i - at), Math.max(0, i + HEARTBEAT_DOCS - at));
        commits.push(beat(part(keys, 1), part(presence, 1 + keys.length), i === 0 && instanceTtlMs !== null));
      }
      return new Map((await Promise.all(commits)).flat());
    },
    async unmarkInstance(instanceId) {
      await instances.doc(docId(instanceId)).delete();
    },
    async markedInstances() {
      const snap = await instances.where('expires_at', '>', Timestamp.now()).select('instance_id').get();
      return snap.docs.map((d) => d.get('instance_id') as string);
    },
    async close() {
      await db.terminate();
    },
  };
}
