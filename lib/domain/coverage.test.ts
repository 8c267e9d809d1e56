// The one coverage computation (live recorder and manifest rows alike): checked against a plain
// frame-by-frame count, and the hole arithmetic behind the 64-missing-ranges bound.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { coverageOf, RangeSet } from './coverage';

describe('RangeSet', () => {
  it('should merge ranges and report the contiguous prefix and the holes', () => {
    const set = RangeSet.of([
      [5, 9],
      [0, 2],
      [3, 3],
      [12, 12],
    ]);
    expect(set.ranges()).toEqual([
      [0, 3],
      [5, 9],
      [12, 12],
    ]);
    expect(set.contiguous).toBe(3);
    expect(set.missing()).toEqual([
      [4, 4],
      [10, 11],
    ]);
    expect(set.holes).toBe(2);
    expect(set.size).toBe(10);
    expect([set.has(4), set.has(5), set.has(12), set.has(13)]).toEqual([false, true, true, false]);
    expect(RangeSet.of([[1, 4]]).contiguous).toBe(-1);
    expect(RangeSet.of([[1, 4]]).holes).toBe(1);
  });

  it('should tell how a frame changes the number of holes: opening, splitting, shrinking, filling', () => {
    const set = RangeSet.of([
      [0, 2],
      [8, 9],
      [11, 11],
    ]); // holes 3..7 and 10
    expect(set.holesAfterAdding(13)).toBe(3); // past the end with a gap: opens one
    expect(set.holesAfterAdding(12)).toBe(2); // right after the end
    expect(set.holesAfterAdding(5)).toBe(3); // inside 3..7, away from its edges: splits it
    expect(set.holesAfterAdding(3)).toBe(2); // an edge: shrinks it
    expect(set.holesAfterAdding(7)).toBe(2);
    expect(set.holesAfterAdding(10)).toBe(1); // fills a one-frame hole
    expect(set.holesAfterAdding(9)).toBe(2); // already there
    expect(RangeSet.of([[4, 9]]).holesAfterAdding(2)).toBe(2); // splits the leading hole 0..3
    expect(RangeSet.of([[4, 9]]).holesAfterAdding(0)).toBe(1);
    expect(new RangeSet().holesAfterAdding(0)).toBe(0);
    expect(new RangeSet().holesAfterAdding(3)).toBe(1);
  });

  it('should agree with a frame-by-frame count on any ranges, in any order (property)', () => {
    const ranges = fc.array(
      fc.tuple(fc.nat(60), fc.nat(6)).map(([s, len]) => [s, s + len] as [number, number]),
      { maxLength: 20 },
    );
    fc.assert(
      fc.property(ranges, fc.nat(70), (rs, n) => {
        const frames = new Set(rs.flatMap(([s, e]) => Array.from({ length: e - s + 1 }, (_, i) => s + i)));
        const max = frames.size ? Math.max(...frames) : -1;
        const holesOf = (f: Set<number>, top: number) => {
          let holes = 0;
          for (let i = 0; i <= top; i++) if (!f.has(i) && (i === 0 || f.has(i - 1))) holes++;
          return holes;
        };
        let contiguous = -1;
        while (frames.has(contiguous + 1)) contiguous++;
        const set = RangeSet.of(rs);
        const one = new RangeSet();
        for (const [s, e] of rs) one.add(s, e); // one at a time, as the recorder learns them
        expect(one.ranges()).toEqual(set.ranges());
        const cov = coverageOf(rs.map(([s, e]) => ({ start_sequence: s, end_sequence: e, byte_count: 1 })));
        expect(cov).toMatchObject({
          highest_contiguous_sequence: contiguous,
          frames_stored: frames.size,
          highest_sequence: max,
          bytes_stored: rs.length,
        });
        expect(cov.missing_ranges.length).toBe(holesOf(frames, max));
        expect(
          cov.missing_ranges.every(
            ([s, e]) => s <= e && Array.from({ length: e - s + 1 }, (_, i) => s + i).every((f) => !frames.has(f)),
          ),
        ).toBe(true);
        expect(set.holes).toBe(cov.missing_ranges.length);
        const after = new Set(frames).add(n);
        expect(set.holesAfterAdding(n)).toBe(holesOf(after, Math.max(max, n)));
      }),
      { seed: 20261124, numRuns: 500 },
    );
  });
});
