// A take's coverage: which frame sequences are stored and which are missing. One computation,
// used by the live recorder (its in-memory view of what is durable) and by everything that
// derives coverage from segment_manifest rows (progress, stop, gap uploads, GET, finalize).
//
// RangeSet: a set of non-negative integers kept as sorted, merged, inclusive ranges. A take has
// few ranges (one, plus one per hole).

import { DomainError } from '../errors';

export type Range = [number, number];

/** Missing ranges a take may have below its highest frame, live or through gap uploads (decisions.md sections 6, 7). */
export const MAX_MISSING_RANGES = 64;

/**
 * 422 too_many_gaps when storing frames start..end would leave the take more than
 * MAX_MISSING_RANGES missing ranges (and more than it has): a range past the highest frame with
 * a gap, or inside a missing range away from its ends, opens one. Uploads in sequence order never do.
 */
export function assertGapsBounded(
  before: Pick<Coverage, 'missing_ranges' | 'highest_sequence'>,
  start: number,
  end: number,
): void {
  const after: Range[] = before.missing_ranges
    .flatMap(([a, b]): Range[] => [
      [a, Math.min(b, start - 1)],
      [Math.max(a, end + 1), b],
    ])
    .filter(([a, b]) => a <= b);
  if (start > before.highest_sequence + 1) after.push([before.highest_sequence + 1, start - 1]);
  if (after.length > Math.max(MAX_MISSING_RANGES, before.missing_ranges.length)) {
    throw new DomainError(
      'too_many_gaps',
      `storing frames ${start}-${end} would leave the take ${after.length} missing ranges (at most ${MAX_MISSING_RANGES}); ` +
        'nothing was stored: upload the missing ranges in sequence order',
    );
  }
}

export class RangeSet {
  private r: Range[] = [];

  /** Sorted first, then merged in one pass: a take's tens of thousands of rows in O(n log n). */
  static of(ranges: Iterable<readonly [number, number]>): RangeSet {
    const sorted = [...ranges].filter(([s, e]) => e >= s).sort((x, y) => x[0] - y[0]);
    const set = new RangeSet();
    for (const [s, e] of sorted) {
      const last = set.r[set.r.length - 1];
      if (last && s <= last[1] + 1) last[1] = Math.max(last[1], e);
      else set.r.push([s, e]);
    }
    return set;
  }

  clone(): RangeSet {
    const copy = new RangeSet();
    copy.r = this.r.map(([s, e]) => [s, e]);
    return copy;
  }

  add(start: number, end: number): void {
    if (end < start) return;
    // The live path adds each frame at the end: extend the last range (or append one) in place,
    // without copying the set per frame.
    const last = this.r[this.r.length - 1];
    if (!last || start > last[1] + 1) return void this.r.push([start, end]);
    if (start >= last[0]) return void (last[1] = Math.max(last[1], end));
    const out: Range[] = [];
    let s = start;
    let e = end;
    let placed = false;
    for (const [a, b] of this.r) {
      if (b < s - 1) out.push([a, b]);
      else if (a > e + 1) {
        if (!placed) out.push([s, e]), (placed = true);
        out.push([a, b]);
      } else {
        s = Math.min(s, a);
        e = Math.max(e, b);
      }
    }
    if (!placed) out.push([s, e]);
    this.r = out;
  }

  has(n: number): boolean {
    return this.indexOf(n) >= 0;
  }

  /** Every sequence 0..this is in the set; -1 when 0 is not. */
  get contiguous(): number {
    return this.r.length && this.r[0][0] === 0 ? this.r[0][1] : -1;
  }

  /** The highest member; -1 when empty. */
  get max(): number {
    return this.r.length ? this.r[this.r.length - 1][1] : -1;
  }

  /** How many integers the set holds. */
  get size(): number {
    let n = 0;
    for (const [a, b] of this.r) n += b - a + 1;
    return n;
  }

  /** How many ranges missing() has, without building them. */
  get holes(): number {
    return this.r.length === 0 ? 0 : this.r.length - (this.r[0][0] === 0 ? 1 : 0);
  }

  /**
   * How adding `n` changes the number of holes: +1 when it opens one (past the end with a gap,
   * or strictly inside a hole, splitting it), −1 when it fills a one-frame hole, else 0.
   */
  holesAfterAdding(n: number): number {
    if (this.has(n)) return this.holes;
    if (n > this.max) return this.holes + (n > this.max + 1 ? 1 : 0);
    // n lies in a hole: [left end + 1, right start − 1] (left end −1 when n is before the first range).
    const right = this.r.findIndex(([a]) => a > n);
    const low = right > 0 ? this.r[right - 1][1] + 1 : 0;
    const high = this.r[right][0] - 1;
    if (low === high) return this.holes - 1;
    return this.holes + (n > low && n < high ? 1 : 0);
  }

  /** Inclusive ranges between 0 and the highest member that the set lacks. */
  missing(): Range[] {
    const out: Range[] = [];
    let next = 0;
    for (const [a, b] of this.r) {
      if (a > next) out.push([next, a - 1]);
      next = b + 1;
    }
    return out;
  }

  ranges(): readonly Range[] {
    return this.r;
  }

  private indexOf(n: number): number {
    let lo = 0;
    let hi = this.r.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const [a, b] = this.r[mid];
      if (n < a) hi = mid - 1;
      else if (n > b) lo = mid + 1;
      else return mid;
    }
    return -1;
  }
}

export interface Coverage {
  /** Every frame 0..this is stored; -1 when frame 0 is not. */
  highest_contiguous_sequence: number;
  /** Inclusive [start, end] ranges below the highest stored sequence that no row covers. */
  missing_ranges: Range[];
  frames_stored: number;
  bytes_stored: number;
  highest_sequence: number;
}

/** The coverage of a set of stored frames holding `bytes` bytes. */
export function coverageOfSet(stored: RangeSet, bytes: number): Coverage {
  return {
    highest_contiguous_sequence: stored.contiguous,
    missing_ranges: stored.missing(),
    frames_stored: stored.size,
    bytes_stored: bytes,
    highest_sequence: stored.max,
  };
}

/** The coverage of stored rows (segment_manifest rows, or any inclusive ranges with their bytes). */
export function coverageOf(rows: { start_sequence: number; end_sequence: number; byte_count: number }[]): Coverage {
  let bytes = 0;
  for (const r of rows) bytes += r.byte_count;
  return coverageOfSet(RangeSet.of(rows.map((r) => [r.start_sequence, r.end_sequence] as const)), bytes);
}
