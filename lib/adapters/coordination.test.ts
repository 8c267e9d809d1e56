import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { emulatorFromEnvOrStart, type RunningEmulator } from '../../emulators/gcloud';
import { createCoordination, createFirestore, HEARTBEAT_DOCS, type Coordination } from './coordination';

// Two Coordination clients on one Firestore stand for two Cloud Run instances.
let emulator: RunningEmulator;
let one: Coordination;
let two: Coordination;
const prefix = `t${randomUUID().slice(0, 8)}_`;
const projectId = 'coordination-test';

const key = () => `recording/${randomUUID()}`;
/** One instance's heartbeat over the given leases (and presence). */
const beat = (c: Coordination, owner: string, leaseKeys: string[], ttlMs: number, presence: Presence[] = []) =>
  c.heartbeat({ owner, instanceTtlMs: ttlMs, leaseKeys, leaseTtlMs: ttlMs, presence, presenceTtlMs: ttlMs });
type Presence = { userId: string; connectionId: string };

beforeAll(async () => {
  emulator = await emulatorFromEnvOrStart('firestore');
  one = createCoordination({ projectId, emulatorHost: emulator.host, collectionPrefix: prefix });
  two = createCoordination({ projectId, emulatorHost: emulator.host, collectionPrefix: prefix });
});

afterAll(async () => {
  await Promise.allSettled([one?.close(), two?.close()]);
  await emulator?.stop();
});

describe('leases', () => {
  it('should let exactly one of ten concurrent acquires win', async () => {
    const k = key();
    const owners = Array.from({ length: 10 }, (_, i) => `instance-${i}`);
    const results = await Promise.all(owners.map((o, i) => (i % 2 ? one : two).acquire(k, o, 30_000)));
    const winners = results.filter((r) => r !== null);
    expect(winners).toHaveLength(1);
    expect(await one.get(k)).toEqual(winners[0]);
    expect(winners[0]!.epoch).toBe(1);
  });

  it('should refuse a held lease, re-grant it to its owner, and give it away once expired', async () => {
    const k = key();
    const held = await one.acquire(k, 'a', 400);
    expect(held).toMatchObject({ key: k, owner: 'a', epoch: 1 });
    expect(await two.acquire(k, 'b', 400)).toBeNull();
    expect(await one.acquire(k, 'a', 400)).toMatchObject({ owner: 'a', epoch: 1 });

    await vi.waitFor(async () => expect(await one.get(k)).toBeNull(), { timeout: 10_000, interval: 50 }); // the 400 ms lease lapses
    const taken = await two.acquire(k, 'b', 10_000);
    expect(taken).toMatchObject({ owner: 'b', epoch: 2 });
    expect(taken!.expiresAt.getTime()).toBeGreaterThan(Date.now() + 9_000);
  });

  it('should make the old owner lose the lease on its next renew after a takeover', async () => {
    const k = key();
    await one.acquire(k, 'a', 30_000);
    const renewed = (await beat(one, 'a', [k], 60_000)).get(k);
    expect(renewed).toMatchObject({ owner: 'a', epoch: 1 });
    expect(renewed!.expiresAt.getTime()).toBeGreaterThan(Date.now() + 50_000);

    expect(await two.takeOver(k, 'b', 30_000)).toMatchObject({ owner: 'b', epoch: 2 });
    expect((await beat(one, 'a', [k], 30_000)).get(k)).toBeNull();
    expect(await one.get(k)).toMatchObject({ owner: 'b', epoch: 2 });
  });

  it('should release only when still the owner, keeping the epoch growing', async () => {
    const k = key();
    await one.acquire(k, 'a', 30_000);
    await two.release(k, 'b');
    expect(await one.get(k)).toMatchObject({ owner: 'a' });

    await one.release(k, 'a');
    expect(await two.get(k)).toBeNull();
    expect(await two.acquire(k, 'b', 30_000)).toMatchObject({ owner: 'b', epoch: 2 });
  });

  it('should store an expires_at Timestamp for the TTL policy', async () => {
    const k = key();
    const lease = await one.acquire(k, 'a', 30_000);
    const db = createFirestore({ projectId, emulatorHost: emulator.host });
    try {
      const docs = (await db.collection(`${prefix}leases`).where('key', '==', k).get()).docs;
      expect(docs).toHaveLength(1);
      expect(docs[0].get('expires_at').toMillis()).toBe(lease!.expiresAt.getTime());
    } finally {
      await db.terminate();
    }
  });
});

describe('the heartbeat (the mark, every lease and presence of an instance in one commit)', () => {
  it('should mark the instance alive for its TTL, with no lease or presence to renew', async () => {
    const owner = `instance-${randomUUID()}`;
    await beat(one, owner, [], 60_000);
    expect(await two.markedInstances()).toContain(owner);
    await beat(one, owner, [], 1);
    await vi.waitFor(async () => expect(await two.markedInstances()).not.toContain(owner));
  });

  it('should renew every lease it is given, keeping owner and epoch, and refresh presence, past one commit', async () => {
    // More documents than one commit takes: the leases and the presence span three commits.
    const keys = Array.from({ length: HEARTBEAT_DOCS + 10 }, key);
    await Promise.all(keys.map((k) => one.acquire(k, 'a', 1_000)));
    const users = Array.from({ length: 5 }, () => `user-${randomUUID()}`);
    const presence = users.flatMap((userId) =>
      Array.from({ length: 100 }, (_, i) => ({ userId, connectionId: `c${i}` })),
    );
    const before = Date.now();
    const leases = await beat(one, 'a', keys, 60_000, presence);
    // Every key, read back from Firestore: a lease left out of the commit keeps its 1 s expiry.
    const stored = await Promise.all(keys.map((k) => two.get(k)));
    for (const [i, k] of keys.entries()) {
      expect(leases.get(k)).toMatchObject({ key: k, owner: 'a', epoch: 1 });
      expect(stored[i]).toEqual(leases.get(k));
      expect(stored[i]!.expiresAt.getTime()).toBeGreaterThanOrEqual(before + 60_000);
    }
    for (const user of users) expect(await two.countPresence(user)).toBe(100);
    expect(await two.presenceInstances(users[0])).toEqual(['a']);
    expect(await two.markedInstances()).toContain('a');
  });

  it('should report the leases another instance took and leave them to it, renewing the rest', async () => {
    const keys = Array.from({ length: 12 }, key);
    await Promise.all(keys.map((k) => one.acquire(k, 'a', 30_000)));
    const taken = keys.filter((_, i) => i % 3 === 0);
    await Promise.all(taken.map((k) => two.takeOver(k, 'b', 30_000)));

    const leases = await beat(one, 'a', keys, 60_000);
    for (const k of keys) {
      if (taken.includes(k)) {
        expect(leases.get(k)).toBeNull();
        expect(await two.get(k)).toMatchObject({ owner: 'b', epoch: 2 });
      } else expect(leases.get(k)).toMatchObject({ owner: 'a', epoch: 1 });
    }
  });

  it('should take again a lapsed lease nobody took, and a released one with a new epoch', async () => {
    const lapsed = key();
    const released = key();
    await one.acquire(lapsed, 'a', 200);
    await one.acquire(released, 'a', 30_000);
    await one.release(released, 'a');
    await vi.waitFor(async () => expect(await two.get(lapsed)).toBeNull(), { timeout: 10_000, interval: 50 }); // the 200 ms lease lapses

    const leases = await beat(one, 'a', [lapsed, released], 30_000);
    expect(leases.get(lapsed)).toMatchObject({ owner: 'a', epoch: 1 });
    expect(leases.get(released)).toMatchObject({ owner: 'a', epoch: 2 });
    expect(await two.acquire(lapsed, 'b', 30_000)).toBeNull();
  });

  it('should never overwrite a takeover that races it: the taken leases end with their taker', async () => {
    const keys = Array.from({ length: 30 }, key);
    await Promise.all(keys.map((k) => one.acquire(k, 'a', 30_000)));
    const taken = keys.filter((_, i) => i % 2 === 0);
    const [leases] = await Promise.all([
      beat(one, 'a', keys, 30_000),
      ...taken.map((k) => two.takeOver(k, 'b', 30_000)),
    ]);
    for (const k of keys) {
      const now = await two.get(k);
      if (taken.includes(k)) {
        expect(now).toMatchObject({ owner: 'b', epoch: 2 });
        // The heartbeat either came first (the takeover then bumped the epoch) or saw it.
        expect([null, 1]).toContain(leases.get(k)?.epoch ?? null);
      } else expect(now).toMatchObject({ owner: 'a', epoch: 1 });
    }
  });
});

describe('presence', () => {
  it('should count one user’s connections across instances and drop removed ones', async () => {
    const user = `user-${randomUUID()}`;
    await one.addPresence(user, 'c1', 'instance-1', 30_000);
    await two.addPresence(user, 'c2', 'instance-2', 30_000);
    await two.addPresence(`other-${user}`, 'c3', 'instance-2', 30_000);
    expect(await one.countPresence(user)).toBe(2);
    expect(await two.countPresence(user)).toBe(2);

    expect(await one.removePresence(user, 'c1')).toBe(1);
    expect(await two.removePresence(user, 'c2')).toBe(0);
    expect(await one.countPresence(`other-${user}`)).toBe(1);
  });

  it('should stop counting a connection whose heartbeat lapsed', async () => {
    const user = `user-${randomUUID()}`;
    await one.addPresence(user, 'short', 'instance-1', 300);
    await two.addPresence(user, 'long', 'instance-2', 30_000);
    expect(await two.countPresence(user)).toBe(2);
    await vi.waitFor(async () => expect(await two.countPresence(user)).toBe(1), { timeout: 10_000, interval: 50 }); // the 300 ms one lapses
    // A heartbeat re-adds it.
    await one.addPresence(user, 'short', 'instance-1', 30_000);
    expect(await two.countPresence(user)).toBe(2);
  });
});
