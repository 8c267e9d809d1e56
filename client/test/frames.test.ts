import { describe, expect, it } from 'vitest';
import { backoffDelay, BACKOFF_MAX_MS } from '../src/live/backoff';
import { encodeFrame, FrameStore } from '../src/live/frames';

const frame = (seq: number) => new Uint8Array(4).fill(seq & 0xff);

function storeOf(...seqs: number[]) {
  const store = new FrameStore();
  for (const s of seqs) store.add(s, frame(s));
  return store;
}

describe('encodeFrame', () => {
  it('should prefix the bytes with the sequence number as u64 big-endian', () => {
    const out = encodeFrame(258, new Uint8Array([9, 8]));
    expect([...out]).toEqual([0, 0, 0, 0, 0, 0, 1, 2, 9, 8]);
  });
});

describe('FrameStore', () => {
  it('should drop only frames covered by the highest contiguous sequence', () => {
    const store = storeOf(0, 1, 2, 3, 4);
    store.dropThrough(2);
    expect(store.sequences()).toEqual([3, 4]);
    expect(store.bytes).toBe(8);
  });

  it('should resend the missing ranges and everything past the last one, not what lies between them', () => {
    const store = storeOf(...Array.from({ length: 20 }, (_, i) => i));
    // Stored 0-4, 8-9 and 12-?; the server cannot tell how far its last stored run goes.
    expect(
      store.toResend(4, [
        [5, 7],
        [10, 11],
      ]),
    ).toEqual([5, 6, 7, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    expect(store.toResend(19, [])).toEqual([]);
    expect(store.toResend(9, [])).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
  });

  it('should cut held frames of the ranges into contiguous runs of bounded length', () => {
    const store = storeOf(2, 3, 4, 5, 6, 9, 10, 20, 21);
    const runs = store.runs([[0, 10]], 3);
    expect(runs.map((r) => [r.start, r.end, r.frames.length])).toEqual([
      [2, 4, 3],
      [5, 6, 2],
      [9, 10, 2],
    ]);
    expect(store.runs([[9, 9]], 10, 15).map((r) => [r.start, r.end])).toEqual([
      [9, 9],
      [20, 21],
    ]);
  });
});

describe('backoffDelay', () => {
  it('should grow exponentially and never exceed 30 s', () => {
    expect(backoffDelay(0, () => 0)).toBe(250);
    expect(backoffDelay(0, () => 1)).toBe(500);
    expect(backoffDelay(3, () => 1)).toBe(4000);
    for (const attempt of [6, 10, 50, 1000]) expect(backoffDelay(attempt, () => 1)).toBe(BACKOFF_MAX_MS);
    expect(backoffDelay(1000, () => 0)).toBe(BACKOFF_MAX_MS / 2);
  });
});
