// The tables of bench:live: one row per load, the memory slope, the CPU of every process.
import { FRAME_MS, type LoadResult } from './live-roles';
import { ms, percentile, table, type Row } from './report';

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
}

export function row(live: Measured, bare: Measured, held: boolean): Row {
  const offered = live.n * (1000 / FRAME_MS);
  const liveCpu = live.cpuMs / live.frames;
  const bareCpu = bare.cpuMs / bare.frames;
  return {
    recordings: live.n,
    'offered frames/s': offered,
    'server CPU/frame': `${(liveCpu * 1000).toFixed(0)} µs`,
    'bare ws CPU/frame': `${(bareCpu * 1000).toFixed(0)} µs`,
    ratio: (liveCpu / bareCpu).toFixed(2),
    'server CPU': `${(live.cpuMs / live.wallMs).toFixed(2)} cores`,
    'ack p50': ms(percentile(live.result.ackMs, 50)),
    'ack p99': ms(percentile(live.result.ackMs, 99)),
    'durable / offered': (live.result.acked / live.result.sent).toFixed(3),
    'RSS / recording': `${(live.rssPerRecording / 1024).toFixed(0)} KiB`,
    held: held ? 'yes' : 'no',
  };
}

/** What one more recording costs in memory: the slope of RSS growth between the smallest and largest load (the growth also holds what a started process adds once, JIT code and heap, which a per-recording figure at a small load would count). */
export function memoryLine(points: Measured[]): string {
  const sorted = [...points].sort((a, b) => a.n - b.n);
  const [lo, hi] = [sorted[0], sorted.at(-1)];
  if (!lo || !hi || lo === hi) return '';
  const slope = (hi.rssPerRecording * hi.n - lo.rssPerRecording * lo.n) / (hi.n - lo.n);
  return `Memory: ${(slope / 1024).toFixed(0)} KiB of RSS per additional recording (the growth of the server's RSS from ${lo.n} to ${hi.n} recordings).`;
}

/** The cores each process group used at capacity and at the first load not held: which one was the limit. */
export function processTable(at: Measured | undefined, over: Measured | undefined): string {
  const points = [at, over].filter((m): m is Measured => !!m);
  if (!points.length) return '';
  // Helpers that used no measurable CPU (a shell, esbuild's service) are left out.
  const groups = [...new Set(points.flatMap((m) => [...m.groups.keys()]))]
    .filter((g) => points.some((m) => (m.groups.get(g) ?? 0) / m.wallMs >= 0.005))
    .sort();
  const cols = points.map((m) => `cores at ${m.n} recordings${m === at ? ' (capacity)' : ' (not held)'}`);
  const rows: Row[] = groups.map((g) =>
    Object.fromEntries([
      ['process', g],
      ...points.map((m, i) => [cols[i], ((m.groups.get(g) ?? 0) / m.wallMs).toFixed(2)]),
    ]),
  );
  const busy = points.map(
    (m) => `at ${m.n} recordings ${m.cores.map((ms, c) => `core ${c} ${(ms / m.wallMs).toFixed(2)}`).join(', ')}`,
  );
  return [
    `CPU of every process over the window (a core is 1.00; the server has one core of its own when pinned):`,
    '',
    table(rows),
    '',
    `Cores busy over the window (/proc/stat: the processes above and the kernel's work for them, loopback networking included): ${busy.join('; ')}.`,
  ].join('\n');
}
