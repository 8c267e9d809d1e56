// The tables of bench:live: one row per load, the memory slope, the CPU of every process.
import type { LoadResult } from './live-roles';
import { ms, percentile, type Row } from './report';

export interface Measured {
  n: number;
  mode: 'live' | 'bare';
  result: LoadResult;
  /** Frames durable (live) or received (bare) in the window. */
  frames: number;
  /** Server CPU ms over the window, and the window's wall ms. */
  cpuMs: number;
  wallMs: number;
  /** CPU ms of every process group over the window. */
  groups: Map<string, number>;
  /** Busy ms of every core over the window (the kernel's work included). */
  cores: number[];
  rssPerRecording: number;
  /** Firestore documents the server's heartbeats wrote in the window (live mode). */
  firestoreWrites: number;
}

export function row(live: Measured, bare: Measured, held: boolean): Row {
  const liveCpu = live.cpuMs / live.frames;
  const bareCpu = bare.cpuMs / bare.frames;
  return {
    recordings: live.n,
    'server CPU/frame': `${(liveCpu * 1000).toFixed(0)} µs`,
    'bare ws CPU/frame': `${(bareCpu * 1000).toFixed(0)} µs`,
    ratio: (liveCpu / bareCpu).toFixed(2),
    'ack p99': ms(percentile(live.result.ackMs, 99)),
    'durable / offered': (live.result.acked / live.result.sent).toFixed(3),
    held: held ? 'yes' : 'no',
  };
}

/** What one more recording costs in memory: the slope of RSS growth between the smallest and largest load (the growth also holds what a started process adds once, JIT code and heap, which a per-recording figure at a small load would count). */
export function memoryLine(points: Measured[]): string {
  const sorted = [...points].sort((a, b) => a.n - b.n);
  const [lo, hi] = [sorted[0], sorted.at(-1)];
  if (!lo || !hi || lo === hi) return '';
  const slope = (hi.rssPerRecording * hi.n - lo.rssPerRecording * lo.n) / (hi.n - lo.n);
  return `Memory: ${(slope / 1024).toFixed(0)} KiB of RSS per additional recording (${lo.n} → ${hi.n} recordings).`;
}

/** The cores each process group used at capacity and at the first load not held: which one was the limit. */
export function processTable(at: Measured | undefined, over: Measured | undefined): string {
  const points = [at, over].filter((m): m is Measured => !!m);
  if (!points.length) return '';
  // Helpers that used no measurable CPU (a shell, esbuild's service) are left out.
  const groups = [...new Set(points.flatMap((m) => [...m.groups.keys()]))]
    .filter((g) => points.some((m) => (m.groups.get(g) ?? 0) / m.wallMs >= 0.005))
    .sort();
  const loads = points.map((m) => `${m.n}${m === at ? ' (capacity)' : ' (not held)'}`).join(' / ');
  const cores = groups.map(
    (g) => `${g} ${points.map((m) => ((m.groups.get(g) ?? 0) / m.wallMs).toFixed(2)).join(' / ')}`,
  );
  const busy = points.map(
    (m) => `at ${m.n} recordings ${m.cores.map((ms, c) => `core ${c} ${(ms / m.wallMs).toFixed(2)}`).join(', ')}`,
  );
  return [
    `Cores each process used at ${loads} recordings: ${cores.join('; ')}.`,
    '',
    `Cores busy (/proc/stat, the kernel's loopback work included): ${busy.join('; ')}.`,
  ].join('\n');
}
