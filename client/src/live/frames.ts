// The client's copy of recorded audio frames that the server has not yet declared durable,
// and the wire format of a frame. A frame is dropped only when a server message reports it
// covered by highest_contiguous_sequence (stored in object storage with a manifest row); until
// then it can be resent after a reconnect or uploaded as a gap after stop.

/** 100 ms of 16 kHz mono s16le. */
export const FRAME_BYTES = 3200;
export const FRAME_MS = 100;
const HEADER_BYTES = 8;

export type Range = [number, number];

/** Ranges as REST answers type them (arrays of two numbers), as pairs. */
export function toRanges(ranges: readonly (readonly number[])[]): Range[] {
  return ranges.map(([a, b]) => [a, b]);
}

/** A binary WebSocket message: u64 big-endian sequence number, then the frame's bytes. */
export function encodeFrame(seq: number, bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(HEADER_BYTES + bytes.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(seq), false);
  out.set(bytes, HEADER_BYTES);
  return out;
}

export interface Run {
  start: number;
  end: number;
  frames: Uint8Array[];
}

export class FrameStore {
  private readonly frames = new Map<number, Uint8Array>();
  bytes = 0;

  get size(): number {
    return this.frames.size;
  }

  add(seq: number, bytes: Uint8Array): void {
    if (this.frames.has(seq)) return;
    this.frames.set(seq, bytes);
    this.bytes += bytes.length;
  }

  get(seq: number): Uint8Array | undefined {
    return this.frames.get(seq);
  }

  /** The server holds every frame up to and including `seq`: forget them. */
  dropThrough(seq: number): void {
    for (const s of [...this.frames.keys()]) if (s <= seq) this.delete(s);
  }

  delete(seq: number): void {
    const f = this.frames.get(seq);
    if (!f) return;
    this.frames.delete(seq);
    this.bytes -= f.length;
  }

  /** Held sequence numbers, ascending. */
  sequences(): number[] {
    return [...this.frames.keys()].sort((a, b) => a - b);
  }

  /**
   * What to resend after RecordingResumed: held frames inside a missing range, and held frames
   * past everything the server reported (it cannot name frames it never received). Frames
   * between the missing ranges are stored already; resending one would only be ignored.
   */
  toResend(highestContiguous: number, missing: readonly Range[]): number[] {
    const frontier = Math.max(highestContiguous, ...missing.map(([, e]) => e));
    return this.sequences().filter((s) => s > highestContiguous && (s > frontier || inRanges(s, missing)));
  }

  /** Held frames inside the ranges (plus, with `tailAfter`, every held frame past it), as contiguous runs of at most maxFrames. */
  runs(ranges: readonly Range[], maxFrames: number, tailAfter?: number): Run[] {
    const seqs = this.sequences().filter((s) => inRanges(s, ranges) || (tailAfter !== undefined && s > tailAfter));
    const out: Run[] = [];
    for (const s of seqs) {
      const last = out[out.length - 1];
      if (last && last.end === s - 1 && last.frames.length < maxFrames) {
        last.end = s;
        last.frames.push(this.frames.get(s)!);
      } else {
        out.push({ start: s, end: s, frames: [this.frames.get(s)!] });
      }
    }
    return out;
  }
}

export function inRanges(seq: number, ranges: readonly Range[]): boolean {
  return ranges.some(([a, b]) => seq >= a && seq <= b);
}

/** Total frames the ranges span. */
export function rangeFrames(ranges: readonly Range[]): number {
  return ranges.reduce((n, [a, b]) => n + b - a + 1, 0);
}
