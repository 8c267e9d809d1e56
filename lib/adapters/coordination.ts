// Live-session coordination across Cloud Run instances, in Firestore: the takes' leases
// (docs/decisions/0009-fanout-liveness.md). Each live instance has ONE document, its liveness and
// presence, owned by lib/fanout/liveness.ts; its heartbeat renews it here, in one transaction with
// the check of its leases. A take's lease document is written only when ownership changes
// (acquire, takeOver, release) and carries owner and epoch (the fencing token); a lease is live
// while its owner's instance document is, or within the cover its acquire gave it. Exclusivity
// comes from Firestore transactions. Expiry is judged by the caller's clock, so TTLs should be far
// above the clock skew between instances (seconds, not milliseconds).
import {
  Firestore,
  Timestamp,
  type DocumentData,
  type DocumentReference,
  type Transaction,
} from '@google-cloud/firestore';
import { instanceDocuments, type InstanceRegistry } from '../fanout/liveness';
import { emulatorAuth } from './google-auth';

export interface Lease {
  key: string;
  owner: string;
  expiresAt: Date;
  /** Grows by one whenever ownership changes hands; a fencing token. */
  epoch: number;
}

/** The leases, and (lib/fanout/liveness.ts) the instances' presence and liveness. */
export interface Coordination extends InstanceRegistry {
  /** Succeeds when the lease is free, expired, or already held by `owner`. */
  acquire(key: string, owner: string, ttlMs: number): Promise<Lease | null>;
  /** Forced takeover (a resume on another instance): always succeeds and bumps the epoch. */
  takeOver(key: string, owner: string, ttlMs: number): Promise<Lease>;
  /** Only if still ours. */
  release(key: string, owner: string): Promise<void>;
  /** The current, unexpired lease. */
  get(key: string): Promise<Lease | null>;
  /**
   * An instance's heartbeat, one transaction: its document alive for ttlMs more (its liveness, its
   * leases' and its presence's), and each given lease checked; a lease released or lapsed that
   * nobody took is taken again. Returns each key's lease, null where another owner holds it now.
   */
  heartbeat(beat: Heartbeat): Promise<Map<string, Lease | null>>;
  /** Documents written since the client was made: in all, and by heartbeats (bench:live's Firestore figure). */
  readonly writes: number;
  readonly heartbeatWrites: number;
  close(): Promise<void>;
}

export interface Heartbeat {
  /** The instance: its leases' owner, and the one alive for ttlMs more. */
  owner: string;
  ttlMs: number;
  leaseKeys: string[];
}

/**
 * A lease document's content; `owner` is empty after a release (the epoch is kept for fencing).
 * `expiresAt` is the cover its acquire gave it, until the owner's heartbeat carries it.
 */
export interface LeaseState {
  owner: string;
  expiresAt: number;
  epoch: number;
}

// The lease rules, shared with the in-process substitute (emulators/fallback).

/** The lease as the rules judge it: held until its cover or its owner's liveness ends, whichever is later. */
export function liveState(state: LeaseState | undefined, ownerAliveUntil: number): LeaseState | undefined {
  if (!state?.owner) return state;
  let expiresAt = state.expiresAt;
  // guard: lease-lives-with-its-owner | remove: expiresAt = Math.max(expiresAt, ownerAliveUntil); | test: test/live/heartbeat.test.ts :: renew a take's lease
  expiresAt = Math.max(expiresAt, ownerAliveUntil);
  return { ...state, expiresAt };
}

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

/**
 * The heartbeat's rule for one lease: renewed while ours (by the instance's own document: no
 * lease write), else taken again if free or lapsed (a lease write). `write` says which.
 */
export function beatLease(current: LeaseState | undefined, owner: string, ttlMs: number, now: number) {
  const renewed = renewedLease(current, owner, ttlMs, now);
  if (renewed) return { next: renewed, write: false };
  const next = acquiredLease(current, owner, ttlMs, now);
  return { next, write: next !== null };
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

/** Keeps a lease document (its epoch, the fencing token) a day past its cover; the TTL policy deletes it then. */
const LEASE_DOC_KEEP_MS = 24 * 3_600_000;

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
  const instances = instanceDocuments(db.collection(`${prefix}instances`), docId);
  let writes = 0;
  let heartbeatWrites = 0;

  const readState = (data: DocumentData | undefined): LeaseState | undefined =>
    data && {
      owner: data.owner as string,
      expiresAt: (data.covered_until as Timestamp).toMillis(),
      epoch: data.epoch as number,
    };

  // Counted once committed (a transaction's body may run again).
  const setLease = (tx: Transaction, ref: DocumentReference, key: string, next: LeaseState) =>
    tx.set(ref, {
      key,
      owner: next.owner,
      epoch: next.epoch,
      covered_until: Timestamp.fromMillis(next.expiresAt),
      expires_at: Timestamp.fromMillis(next.expiresAt + LEASE_DOC_KEEP_MS),
    });
  // Racing instances contend on a document; the emulator aborts the losers, which retry.
  const TX = { maxAttempts: 20 };

  /** The lease documents' states and, for each owner among them, until when it is alive. */
  const readLeases = async (tx: Transaction, refs: DocumentReference[], self?: string) => {
    const states = refs.length ? (await tx.getAll(...refs)).map((snap) => readState(snap.data())) : [];
    const owners = [...new Set(states.map((s) => s?.owner).filter((o): o is string => !!o && o !== self))];
    return { states, until: await instances.aliveUntil(tx, owners) };
  };

  /** Reads, decides and writes one lease document in a transaction. */
  const change = async <T extends LeaseState | null>(
    key: string,
    decide: (current: LeaseState | undefined, now: number) => T,
  ) => {
    const done = await db.runTransaction(async (tx) => {
      const ref: DocumentReference = leases.doc(docId(key));
      const {
        states: [state],
        until,
      } = await readLeases(tx, [ref]);
      const now = Date.now();
      const next = decide(liveState(state, until.get(state?.owner ?? '') ?? 0), now);
      if (next) setLease(tx, ref, key, next);
      return { next, now };
    }, TX);
    if (done.next) writes++;
    return done;
  };

  return {
    get writes() {
      return writes + instances.writes;
    },
    get heartbeatWrites() {
      return heartbeatWrites;
    },
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
      const state = readState((await leases.doc(docId(key)).get()).data());
      const owner = state?.owner ? ((await instances.aliveUntil(null, [state.owner])).get(state.owner) ?? 0) : 0;
      return toLease(key, liveState(state, owner), Date.now());
    },
    async heartbeat({ owner, ttlMs, leaseKeys }) {
      const keys = [...new Set(leaseKeys)];
      // One transaction: a batched read of the instance's own document and its leases, one
      // commit of its own document (and of any lease taken again: rare). Each lease is decided by
      // the same rule as alone, on the state the commit is fenced to.
      const { decided, now, written } = await db.runTransaction(async (tx) => {
        const refs = keys.map((k) => leases.doc(docId(k)));
        const renew = await instances.readForBeat(tx, owner);
        const { states, until } = await readLeases(tx, refs, owner);
        const now = Date.now();
        let written = 1;
        const decided = states.map((state, i) => {
          const alive = state?.owner === owner ? now + ttlMs : (until.get(state?.owner ?? '') ?? 0);
          const { next, write } = beatLease(liveState(state, alive), owner, ttlMs, now);
          if (write) {
            setLease(tx, refs[i], keys[i], next!);
            written++;
          }
          return next;
        });
        renew(now + ttlMs);
        return { decided, now, written };
      }, TX);
      writes += written;
      heartbeatWrites += written;
      return new Map(keys.map((k, i) => [k, toLease(k, decided[i], now)] as const));
    },
    addPresence: instances.addPresence,
    removePresence: instances.removePresence,
    countPresence: instances.countPresence,
    presenceInstances: instances.presenceInstances,
    unmarkInstance: instances.unmarkInstance,
    markedInstances: instances.markedInstances,
    async close() {
      await db.terminate();
    },
  };
}
