// A set of non-negative integers kept as sorted, merged, inclusive ranges: which frame
// sequences of a take are durable. A take has few ranges (one, plus one per gap).

export type Range = [number, number];

export class RangeSet {
  private r: Range[] = [];

  static of(ranges: Iterable<readonly [number, number]>): RangeSet {
    const set = new RangeSet();
    for (const [s, e] of ranges) set.add(s, e);
    return set;
  }

  clone(): RangeSet {
    const copy = new RangeSet();
    copy.r = this.r.map(([s, e]) => [s, e]);
    return copy;
  }

  add(start: number, end: number): void {
    if (end < start) return;
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
    let lo = 0;
    let hi = this.r.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const [a, b] = this.r[mid];
      if (n < a) hi = mid - 1;
      else if (n > b) lo = mid + 1;
      else return true;
    }
    return false;
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
}
