import { describe, expect, it } from 'vitest';
import { RouteCache } from './route-cache';

/** A presence table the test sets, counting its reads. */
function presence(initial: Record<string, string[]>) {
  const table = { ...initial };
  const reads: string[] = [];
  const read = async (userId: string) => (reads.push(userId), [...(table[userId] ?? [])]);
  return { table, reads, read };
}

describe('RouteCache', () => {
  it('should read presence once per version and again when the version changes', async () => {
    const p = presence({ u: ['a'] });
    const cache = new RouteCache(p.read, 60_000);
    expect(await cache.of('u', 1)).toEqual(['a']);
    p.table.u = ['a', 'b'];
    expect(await cache.of('u', 1)).toEqual(['a']);
    expect(await cache.of('u', 2)).toEqual(['a', 'b']);
    expect(p.reads).toEqual(['u', 'u']);
  });

  it('should read presence every time without a version, or once the entry is older than its ttl', async () => {
    const p = presence({ u: ['a'] });
    const uncached = new RouteCache(p.read, 0);
    await uncached.of('u', 1);
    await uncached.of('u', 1);
    const cache = new RouteCache(p.read, 60_000);
    await cache.of('u');
    await cache.of('u');
    expect(p.reads).toHaveLength(4);
  });

  it('should call a user quiet only at the version its empty routes were read at', async () => {
    const p = presence({ u: [], v: ['a'] });
    const cache = new RouteCache(p.read, 60_000);
    expect(cache.quiet('u')).toBeUndefined();
    await cache.of('u', 3);
    await cache.of('v', 3);
    expect(cache.quiet('u')).toBe(3);
    expect(cache.quiet('v')).toBeUndefined();
    expect(new RouteCache(p.read, 0).quiet('u')).toBeUndefined();
  });

  it('should keep a newer version when an older read finishes after it', async () => {
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    const table: Record<number, string[]> = { 1: [], 2: ['b'] };
    let call = 0;
    const cache = new RouteCache(async () => {
      const mine = ++call;
      if (mine === 1) await slow;
      return table[mine];
    }, 60_000);
    const older = cache.of('u', 1);
    expect(await cache.of('u', 2)).toEqual(['b']);
    release();
    expect(await older).toEqual([]);
    expect(await cache.of('u', 2)).toEqual(['b']);
    expect(cache.quiet('u')).toBeUndefined();
    expect(call).toBe(2);
  });
});
