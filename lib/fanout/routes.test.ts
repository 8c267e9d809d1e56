// The routes cache of a live instance's own events: presence read when unknown or stale, kept
// current by presence notices, including one that arrives while a read is under way.
import { describe, expect, it } from 'vitest';
import { RemoteListeners } from './routes';

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
