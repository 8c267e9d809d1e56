// Injected faults for reliability tests: the next `count` requests whose path contains
// `match` answer 503, or stall for stall_ms before being served normally.
export interface FaultSpec {
  mode: 'error503' | 'stall' | 'none';
  count?: number;
  stall_ms?: number;
  match?: string;
}

interface Fault {
  mode: 'error503' | 'stall';
  remaining: number;
  stallMs: number;
  match: string;
}

export type FaultAction = { kind: 'error503' } | { kind: 'stall'; ms: number } | undefined;

export class Faults {
  private faults: Fault[] = [];

  /** Adds a fault; mode "none" clears them all. Throws on a malformed spec. */
  add(spec: FaultSpec): void {
    if (spec.mode === 'none') {
      this.clear();
      return;
    }
    if (spec.mode !== 'error503' && spec.mode !== 'stall') throw new Error('mode must be error503, stall or none');
    const count = spec.count ?? 1;
    const stallMs = spec.stall_ms ?? 0;
    if (!Number.isInteger(count) || count < 1) throw new Error('count must be a positive integer');
    if (!Number.isFinite(stallMs) || stallMs < 0) throw new Error('stall_ms must be a non-negative number');
    if (spec.mode === 'stall' && stallMs === 0) throw new Error('stall needs stall_ms');
    this.faults.push({ mode: spec.mode, remaining: count, stallMs, match: spec.match ?? '' });
  }

  clear(): void {
    this.faults = [];
  }

  /** Consumes the first fault that matches one of these spellings of the request path. */
  take(...paths: string[]): FaultAction {
    const fault = this.faults.find((f) => f.remaining > 0 && paths.some((p) => p.includes(f.match)));
    if (!fault) return undefined;
    fault.remaining -= 1;
    this.faults = this.faults.filter((f) => f.remaining > 0);
    return fault.mode === 'error503' ? { kind: 'error503' } : { kind: 'stall', ms: fault.stallMs };
  }

  list(): FaultSpec[] {
    return this.faults.map((f) => ({ mode: f.mode, count: f.remaining, stall_ms: f.stallMs, match: f.match }));
  }
}
