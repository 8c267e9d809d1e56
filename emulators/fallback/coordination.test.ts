import { describe, expect, it, vi } from 'vitest';
import { createMemoryCoordination } from './coordination';

describe('in-process coordination', () => {
  it('should follow the lease rules: one winner, expiry, takeover, release', async () => {
    const c = createMemoryCoordination();
    const results = await Promise.all(['a', 'b', 'c'].map((o) => c.acquire('k', o, 100)));
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = results.find(Boolean)!.owner;

    await vi.waitFor(async () => expect(await c.get('k')).toBeNull(), { interval: 20 }); // the 100 ms lease lapses
    expect(await c.acquire('k', 'z', 10_000)).toMatchObject({ owner: 'z', epoch: 2 });
    expect(await c.takeOver('k', winner, 10_000)).toMatchObject({ owner: winner, epoch: 3 });
    const beat = {
      owner: 'z',
      instanceTtlMs: 10_000,
      leaseKeys: ['k'],
      leaseTtlMs: 10_000,
      presence: [],
      presenceTtlMs: 10_000,
    };
    expect((await c.heartbeat(beat)).get('k')).toBeNull();
    await c.release('k', winner);
    expect(await c.get('k')).toBeNull();
  });

  it('should count unexpired presence per user', async () => {
    const c = createMemoryCoordination();
    await c.addPresence('u', 'c1', 'i1', 10_000);
    await c.addPresence('u', 'c2', 'i2', 50);
    expect(await c.countPresence('u')).toBe(2);
    await vi.waitFor(async () => expect(await c.countPresence('u')).toBe(1), { interval: 20 }); // 50 ms presence
    expect(await c.removePresence('u', 'c1')).toBe(0);
  });

  it('should list the instances whose mark (their last heartbeat) has not lapsed', async () => {
    const c = createMemoryCoordination();
    const beat = (owner: string, instanceTtlMs: number) =>
      c.heartbeat({ owner, instanceTtlMs, leaseKeys: [], leaseTtlMs: 1, presence: [], presenceTtlMs: 1 });
    await beat('i1', 10_000);
    await beat('i2', 50);
    expect((await c.markedInstances()).sort()).toEqual(['i1', 'i2']);
    await vi.waitFor(async () => expect(await c.markedInstances()).toEqual(['i1']));
    await c.unmarkInstance('i1');
    expect(await c.markedInstances()).toEqual([]);
  });
});
