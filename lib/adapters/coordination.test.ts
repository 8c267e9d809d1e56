import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { emulatorFromEnvOrStart, type RunningEmulator } from '../../emulators/gcloud';
import { createCoordination, createFirestore, type Coordination } from './coordination';

// Two Coordination clients on one Firestore stand for two Cloud Run instances.
let emulator: RunningEmulator;
let one: Coordination;
let two: Coordination;
const prefix = `t${randomUUID().slice(0, 8)}_`;
const projectId = 'coordination-test';

const key = () => `recording/${randomUUID()}`;
/** An instance id of this test alone (an instance's liveness is shared by all its leases). */
const instance = (name: string) => `${name}-${randomUUID().slice(0, 8)}`;
/** One instance's heartbeat over the given leases: alive for ttlMs. */
const beat = (c: Coordination, owner: string, leaseKeys: string[], ttlMs: number) =>
  c.heartbeat({ owner, ttlMs, leaseKeys });

/** The stored fields of a document of this test's collections. */
async function stored(collection: string, id: string) {
  const db = createFirestore({ projectId, emulatorHost: emulator.host });
  try {
    return (await db.collection(`${prefix}${collection}`).doc(encodeURIComponent(id)).get()).data();
  } finally {
    await db.terminate();
  }
}

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
    const owners = Array.from({ length: 10 }, (_, i) => instance(`i${i}`));
    const results = await Promise.all(owners.map((o, i) => (i % 2 ? one : two).acquire(k, o, 30_000)));
    const winners = results.filter((r) => r !== null);
    expect(winners).toHaveLength(1);
    expect(await one.get(k)).toEqual(winners[0]);
    expect(winners[0]!.epoch).toBe(1);
  });

  it('should refuse a held lease, re-grant it to its owner, and give it away once its cover lapsed', async () => {
    const [a, b] = [instance('a'), instance('b')];
    const k = key();
    const held = await one.acquire(k, a, 400);
    expect(held).toMatchObject({ key: k, owner: a, epoch: 1 });
    expect(await two.acquire(k, b, 400)).toBeNull();
    expect(await one.acquire(k, a, 400)).toMatchObject({ owner: a, epoch: 1 });

    await vi.waitFor(async () => expect(await one.get(k)).toBeNull(), { timeout: 10_000, interval: 50 }); // the 400 ms cover lapses
    const taken = await two.acquire(k, b, 10_000);
    expect(taken).toMatchObject({ owner: b, epoch: 2 });
    expect(taken!.expiresAt.getTime()).toBeGreaterThan(Date.now() + 9_000);
  });

  it("should hold a lease while its owner's instance document lives, and free it once that lapses (a killed instance)", async () => {
    const [a, b] = [instance('a'), instance('b')];
    const k = key();
    await one.acquire(k, a, 1);
    await beat(one, a, [], 60_000);
    expect(await two.get(k)).toMatchObject({ owner: a, epoch: 1 });
    expect(await two.acquire(k, b, 30_000)).toBeNull();
    // The owner's last beat, as if it died: its document lapses and the lease with it.
    await beat(one, a, [], 300);
    await vi.waitFor(async () => expect(await two.get(k)).toBeNull(), { timeout: 10_000, interval: 50 });
    expect(await two.acquire(k, b, 30_000)).toMatchObject({ owner: b, epoch: 2 });
  });

  it('should make the old owner lose the lease on its next beat after a takeover', async () => {
    const [a, b] = [instance('a'), instance('b')];
    const k = key();
    await one.acquire(k, a, 30_000);
    const renewed = (await beat(one, a, [k], 60_000)).get(k);
    expect(renewed).toMatchObject({ owner: a, epoch: 1 });
    expect(renewed!.expiresAt.getTime()).toBeGreaterThan(Date.now() + 50_000);

    expect(await two.takeOver(k, b, 30_000)).toMatchObject({ owner: b, epoch: 2 });
    expect((await beat(one, a, [k], 30_000)).get(k)).toBeNull();
    expect(await one.get(k)).toMatchObject({ owner: b, epoch: 2 });
  });

  it('should release only when still the owner, keeping the epoch growing', async () => {
    const [a, b] = [instance('a'), instance('b')];
    const k = key();
    await one.acquire(k, a, 30_000);
    await two.release(k, b);
    expect(await one.get(k)).toMatchObject({ owner: a });

    await one.release(k, a);
    expect(await two.get(k)).toBeNull();
    expect(await two.acquire(k, b, 30_000)).toMatchObject({ owner: b, epoch: 2 });
  });

  it('should keep a lease document (its epoch) a day past its cover, for the TTL policy', async () => {
    const k = key();
    const lease = await one.acquire(k, instance('a'), 30_000);
    const doc = await stored('leases', k);
    expect(doc!.covered_until.toMillis()).toBe(lease!.expiresAt.getTime());
    expect(doc!.expires_at.toMillis()).toBe(lease!.expiresAt.getTime() + 24 * 3_600_000);
  });
});

describe("the heartbeat (one document per instance: its liveness, its leases' and its presence's)", () => {
  it('should mark the instance alive for its TTL', async () => {
    const owner = instance('m');
    await beat(one, owner, [], 60_000);
    expect(await two.markedInstances()).toContain(owner);
    await beat(one, owner, [], 1);
    await vi.waitFor(async () => expect(await two.markedInstances()).not.toContain(owner));
  });

  it('should keep every lease it is given, owner and epoch unchanged, writing one document', async () => {
    const a = instance('a');
    const keys = Array.from({ length: 60 }, key);
    await Promise.all(keys.map((k) => one.acquire(k, a, 1_000)));
    const before = Date.now();
    const [written, beats] = [one.writes, one.heartbeatWrites];
    const leases = await beat(one, a, keys, 60_000);
    // Firestore bills documents: the beat wrote the instance's own and no lease.
    expect([one.writes - written, one.heartbeatWrites - beats]).toEqual([1, 1]);
    const read = await Promise.all(keys.map((k) => two.get(k)));
    for (const [i, k] of keys.entries()) {
      expect(leases.get(k)).toMatchObject({ key: k, owner: a, epoch: 1 });
      expect(read[i]).toMatchObject({ key: k, owner: a, epoch: 1 });
      expect(read[i]!.expiresAt.getTime()).toBeGreaterThanOrEqual(before + 60_000);
    }
  });

  it('should report the leases another instance took and leave them to it, keeping the rest', async () => {
    const [a, b] = [instance('a'), instance('b')];
    const keys = Array.from({ length: 12 }, key);
    await Promise.all(keys.map((k) => one.acquire(k, a, 30_000)));
    const taken = keys.filter((_, i) => i % 3 === 0);
    await Promise.all(taken.map((k) => two.takeOver(k, b, 30_000)));

    const leases = await beat(one, a, keys, 60_000);
    for (const k of keys) {
      if (taken.includes(k)) {
        expect(leases.get(k)).toBeNull();
        expect(await two.get(k)).toMatchObject({ owner: b, epoch: 2 });
      } else expect(leases.get(k)).toMatchObject({ owner: a, epoch: 1 });
    }
  });

  it('should take again a lapsed lease nobody took, and a released one with a new epoch', async () => {
    const [a, b] = [instance('a'), instance('b')];
    const lapsed = key();
    const released = key();
    await one.acquire(lapsed, a, 200);
    await one.acquire(released, a, 30_000);
    await one.release(released, a);
    await vi.waitFor(async () => expect(await two.get(lapsed)).toBeNull(), { timeout: 10_000, interval: 50 }); // the 200 ms cover lapses

    const leases = await beat(one, a, [lapsed, released], 30_000);
    expect(leases.get(lapsed)).toMatchObject({ owner: a, epoch: 1 });
    expect(leases.get(released)).toMatchObject({ owner: a, epoch: 2 });
    expect(await two.acquire(lapsed, b, 30_000)).toBeNull();
  });

  it('should never overwrite a takeover that races it: the taken leases end with their taker', async () => {
    const [a, b] = [instance('a'), instance('b')];
    const keys = Array.from({ length: 30 }, key);
    await Promise.all(keys.map((k) => one.acquire(k, a, 30_000)));
    const taken = keys.filter((_, i) => i % 2 === 0);
    const [leases] = await Promise.all([beat(one, a, keys, 30_000), ...taken.map((k) => two.takeOver(k, b, 30_000))]);
    for (const k of keys) {
      const now = await two.get(k);
      if (taken.includes(k)) {
        expect(now).toMatchObject({ owner: b, epoch: 2 });
        // The heartbeat either came first (the takeover then bumped the epoch) or saw it.
        expect([null, 1]).toContain(leases.get(k)?.epoch ?? null);
      } else expect(now).toMatchObject({ owner: a, epoch: 1 });
    }
  });
});

describe('presence (the connections in each instance document)', () => {
  it('should count one user’s connections across instances, route to the instances holding them, and drop removed ones', async () => {
    const [i1, i2] = [instance('i1'), instance('i2')];
    const user = `user-${randomUUID()}`;
    await Promise.all([beat(one, i1, [], 30_000), beat(two, i2, [], 30_000)]);
    const written = one.writes;
    await one.addPresence(user, 'c1', i1);
    expect(one.writes - written).toBe(1); // one document per connection added (and removed)
    await two.addPresence(user, 'c2', i2);
    await two.addPresence(user, 'c3', i2);
    await two.addPresence(`other-${user}`, 'c4', i2);
    expect(await one.countPresence(user)).toBe(3);
    expect((await two.presenceInstances(user)).sort()).toEqual([i1, i2].sort());

    expect(await one.removePresence(user, 'c1', i1)).toBe(2);
    expect(await two.presenceInstances(user)).toEqual([i2]);
    expect(await two.removePresence(user, 'c2', i2)).toBe(1);
    expect(await two.removePresence(user, 'c3', i2)).toBe(0);
    expect(await two.presenceInstances(user)).toEqual([]);
    expect(await one.countPresence(`other-${user}`)).toBe(1);
    // The next beat tidies the routing index: the user left i1's `users`.
    await beat(one, i1, [], 30_000);
    expect((await stored('instances', i1))!.users).toEqual([]);
  });

  it('should stop counting the connections of an instance whose document lapsed', async () => {
    const [i1, i2] = [instance('i1'), instance('i2')];
    const user = `user-${randomUUID()}`;
    await Promise.all([beat(one, i1, [], 300), beat(two, i2, [], 30_000)]);
    await one.addPresence(user, 'short', i1);
    await two.addPresence(user, 'long', i2);
    await vi.waitFor(async () => expect(await two.countPresence(user)).toBe(1), { timeout: 10_000, interval: 50 }); // i1 lapses
    expect(await two.presenceInstances(user)).toEqual([i2]);
    // Its next beat brings its connections back.
    await beat(one, i1, [], 30_000);
    expect(await two.countPresence(user)).toBe(2);
  });
});
