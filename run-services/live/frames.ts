// The frames of one take that arrived but are not durable yet, and which of them are due to be
// written. Objects only ever cover contiguous runs of frames nobody stored yet, so stored
// ranges never overlap whatever order frames arrive in or how often they are resent.
import { RangeSet } from '@mi/lib/domain/coverage';

export interface Frame {
  seq: number;
  bytes: Buffer;
  /** Arrival time (ms). */
  at: number;
}

export interface Run {
  start: number;
  end: number;
  frames: Frame[];
}

export interface DueOptions {
  now: number;
  /** Frames per stored object (RECORDING_SEGMENT_TARGET_MS of audio). */
  targetFrames: number;
  /**
   * A backlog (storage slower than the audio) is written in objects of up to this many frames:
   * fewer, larger writes, so that the write rate adapts to what storage sustains.
   */
  maxFrames: number;
  /** A shorter run is written once its oldest frame waited this long. */
  maxAgeMs: number;
  /** Write everything now (stop, disconnect, shutdown). */
  force: boolean;
}

export class FrameBuffer {
  private readonly pending = new Map<number, Frame>();
  /** Bytes held in `pending`. */
  bytes = 0;

  constructor(readonly durable: RangeSet = new RangeSet()) {}

  get size(): number {
    return this.pending.size;
  }

  /** false: a duplicate (already durable or already waiting), ignored. */
  add(seq: number, bytes: Buffer, at: number): boolean {
    if (this.pending.has(seq) || this.durable.has(seq)) return false;
    this.pending.set(seq, { seq, bytes, at });
    this.bytes += bytes.length;
    return true;
  }

  /** Frames start..end are stored (by us or by someone else): forget our copies. */
  markDurable(start: number, end: number): void {
    this.durable.add(start, end);
    if (this.pending.size === 0) return;
    // Walk whichever side is smaller: the range, or the frames waiting.
    if (end - start + 1 <= this.pending.size) {
      for (let s = start; s <= end; s++) this.drop(s);
    } else {
      for (const s of [...this.pending.keys()]) if (s >= start && s <= end) this.drop(s);
    }
  }

  /** Contiguous runs due for writing, each at most maxFrames long, in sequence order. */
  dueRuns(o: DueOptions): Run[] {
    const seqs = [...this.pending.keys()].sort((a, b) => a - b);
    const runs: Run[] = [];
    let i = 0;
    while (i < seqs.length) {
      let j = i;
      while (j + 1 < seqs.length && seqs[j + 1] === seqs[j] + 1) j++;
      // seqs[i..j] is one contiguous run: chunks of at least targetFrames now, the rest when old enough.
      for (let k = i; k <= j; k += o.maxFrames) {
        const last = Math.min(k + o.maxFrames - 1, j);
        const frames = seqs.slice(k, last + 1).map((s) => this.pending.get(s)!);
        const full = frames.length >= o.targetFrames;
        if (full || o.force || o.now - oldest(frames) >= o.maxAgeMs)
          runs.push({ start: seqs[k], end: seqs[last], frames });
      }
      i = j + 1;
    }
    return runs;
  }

  /** When the oldest waiting frame becomes due by age; null when nothing waits. */
  nextDueAt(maxAgeMs: number): number | null {
    if (this.pending.size === 0) return null;
    let min = Infinity;
    for (const f of this.pending.values()) if (f.at < min) min = f.at;
    return min + maxAgeMs;
  }

  private drop(seq: number): void {
    const f = this.pending.get(seq);
    if (!f) return;
    this.pending.delete(seq);
    this.bytes -= f.bytes.length;
  }
}

function oldest(frames: Frame[]): number {
  let min = Infinity;
  for (const f of frames) if (f.at < min) min = f.at;
  return min;
}
