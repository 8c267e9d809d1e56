import { describe, expect, it, vi } from 'vitest';
import { createMemoryCoordination } from './coordination';

describe('in-process coordination', () => {
  it('should follow the lease rules: one winner, expiry, takeover, release', async () => {
    const c = createMemoryCoordination();
    const results = await Promise.all(['a', 'b', 'c'].map((o) => c.acquire('k', o, 100)));
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = results.find(Boolean)!.owner;

    await vi.waitFor(async () => expect(await c.get('k')).toBeNull(), { interval: 20 }); // the 100 ms cover lapses
    expect(await c.acquire('k', 'z', 10_000)).toMatchObject({ owner: 'z', epoch: 2 });
    expect(await c.takeOver('k', winner, 10_000)).toMatchObject({ owner: winner, epoch: 3 });
    expect((await c.heartbeat({ owner: 'z', ttlMs: 10_000, leaseKeys: ['k'] })).get('k')).toBeNull();
    await c.release('k', winner);
    expect(await c.get('k')).toBeNull();
  });

  it("should hold a lease while its owner's heartbeat lives, writing no lease on a beat", async () => {
    const c = createMemoryCoordination();
    await c.acquire('k', 'a', 1);
    const written = c.writes;
    expect((await c.heartbeat({ owner: 'a', ttlMs: 10_000, leaseKeys: ['k'] })).get('k')).toMatchObject({ epoch: 1 });
    expect(c.writes - written).toBe(1);
    expect(await c.acquire('k', 'b', 10_000)).toBeNull();
    await c.heartbeat({ owner: 'a', ttlMs: 50, leaseKeys: [] });
    await vi.waitFor(async () => expect(await c.acquire('k', 'b', 10_000)).toMatchObject({ owner: 'b', epoch: 2 }));
  });

  it('should count the connections of live instances per user', async () => {
    const c = createMemoryCoordination();
    await c.heartbeat({ owner: 'i1', ttlMs: 10_000, leaseKeys: [] });
    await c.heartbeat({ owner: 'i2', ttlMs: 50, leaseKeys: [] });
    await c.addPresence('u', 'c1', 'i1');
    await c.addPresence('u', 'c2', 'i2');
    expect(await c.countPresence('u')).toBe(2);
    await vi.waitFor(async () => expect(await c.countPresence('u')).toBe(1), { interval: 20 }); // i2 lapses
    expect(await c.presenceInstances('u')).toEqual(['i1']);
    expect(await c.removePresence('u', 'c1', 'i1')).toBe(0);
  });

  it('should list the instances whose last heartbeat has not lapsed', async () => {
    const c = createMemoryCoordination();
    await c.heartbeat({ owner: 'i1', ttlMs: 10_000, leaseKeys: [] });
    await c.heartbeat({ owner: 'i2', ttlMs: 50, leaseKeys: [] });
    expect((await c.markedInstances()).sort()).toEqual(['i1', 'i2']);
    await vi.waitFor(async () => expect(await c.markedInstances()).toEqual(['i1']));
    await c.unmarkInstance('i1');
    expect(await c.markedInstances()).toEqual([]);
  });
});
