// The routes cache of a live instance's own events: presence read when unknown or stale, kept
// current by presence notices, including one that arrives while a read is under way.
import { describe, expect, it } from 'vitest';
import { RemoteListeners, RouteCache } from './routes';

/** A presence store whose reads the test answers one at a time. */
function presence() {
  const pending: ((ids: string[]) => void)[] = [];
  let reads = 0;
  return {
    read: (_userId: string) => {
      reads++;
      return new Promise<string[]>((resolve) => pending.push(resolve));
    },
    answer: (ids: string[]) => pending.shift()!(ids),
    get reads() {
      return reads;
    },
  };
}

describe('RemoteListeners', () => {
  it('should read presence once, leave itself out, and serve the answer until it is stale', async () => {
    const p = presence();
    const l = new RemoteListeners('me', p.read, 60_000);
    const first = l.of('u');
    const second = l.of('u'); // shares the read in flight
    p.answer(['me', 'b', 'b', 'c']);
    expect((await first).sort()).toEqual(['b', 'c']);
    expect((await second).sort()).toEqual(['b', 'c']);
    expect(await l.of('u')).toHaveLength(2);
    expect(p.reads).toBe(1);
  });

  it('should apply notices to what it knows, and a notice that came during a read after that read', async () => {
    const p = presence();
    const l = new RemoteListeners('me', p.read, 60_000);
    const read = l.refresh('u');
    l.noticed('d', 'u', true); // d connected after presence was read
    l.noticed('b', 'u', false); // b let go after it
    p.answer(['b', 'c']);
    expect([...(await read)].sort()).toEqual(['c', 'd']);
    l.noticed('c', 'u', false);
    l.noticed('me', 'u', true);
    expect(await l.of('u')).toEqual(['d']);
  });

  it('should read again once the answer is older than the refresh interval, and forget users not asked about', async () => {
    const p = presence();
    const l = new RemoteListeners('me', p.read, 0);
    const first = l.of('u');
    p.answer(['b']);
    await first;
    const again = l.of('u');
    p.answer(['c']);
    expect(await again).toEqual(['c']);
    expect(p.reads).toBe(2);
    l.prune(Date.now() + 1);
    l.noticed('x', 'u', true); // an unknown user's notice is not kept: the next look reads presence
    const third = l.of('u');
    p.answer([]);
    expect(await third).toEqual([]);
  });
});

/** A presence table the test sets, counting its reads. */
function presenceTable(initial: Record<string, string[]>) {
  const table = { ...initial };
  const reads: string[] = [];
  const read = async (userId: string) => (reads.push(userId), [...(table[userId] ?? [])]);
  return { table, reads, read };
}

describe('RouteCache', () => {
  it('should read presence once per version and again when the version changes', async () => {
    const p = presenceTable({ u: ['a'] });
    const cache = new RouteCache(p.read, 60_000);
    expect(await cache.of('u', 1)).toEqual(['a']);
    p.table.u = ['a', 'b'];
    expect(await cache.of('u', 1)).toEqual(['a']);
    expect(await cache.of('u', 2)).toEqual(['a', 'b']);
    expect(p.reads).toEqual(['u', 'u']);
  });

  it('should read presence every time without a version, or once the entry is older than its ttl', async () => {
    const p = presenceTable({ u: ['a'] });
    const uncached = new RouteCache(p.read, 0);
    await uncached.of('u', 1);
    await uncached.of('u', 1);
    const cache = new RouteCache(p.read, 60_000);
    await cache.of('u');
    await cache.of('u');
    expect(p.reads).toHaveLength(4);
  });

  it('should call a user quiet only at the version its empty routes were read at', async () => {
    const p = presenceTable({ u: [], v: ['a'] });
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
