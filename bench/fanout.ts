// `npm run bench:fanout`: what the event fan-out costs each live instance as the fleet grows.
// 1, 2, 4 and 8 live instances (the deployable bundle, LIVE_WORKERS=1, each its own process, not
// pinned: eight of them share this machine's cores) on one database and one set of emulators,
// the same number of users per instance at every N. Each user records on its home instance and
// has a viewer tab there; every fourth user has a second viewer tab on the next instance (the
// few tabs Cloud Run's session affinity does not keep together). Per instance over the window:
// bus messages received per second, bus messages per event (messages received by the fleet per
// event produced), CPU per durable frame. The deployable has one design, targeted (each
// instance's own topic, addressed by presence); the broadcast baseline (one topic every instance
// reads, the design before) is derived from the same window: every instance would have received
// every event the fleet produced. BENCH_USERS (per instance, default 8: eight instances of 20 users could not start on
// this shared 2-core machine; a multiple of 4 gives every instance the same spread), BENCH_SECONDS
// (default 15).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { treeCpuMs } from './process-cpu';
import type { LoadResult, Plan } from './live-roles';
import { child, makeRecordings, ROOT, startLive, startStack, stopChild } from './live-processes';
import { ms, percentile, table, writeSection, type Row } from './report';

const FLEETS = [1, 2, 4, 8];
/** Every this-many-th user also watches from the next instance. */
const REMOTE_VIEWER_EVERY = 4;

interface Counters {
  busMessages: number;
  busMessagesUnheld: number;
  eventsProduced: number;
}

interface Point {
  instances: number;
  /** Events the whole fleet produced per second: what each instance would receive under broadcast. */
  eventsPerSecond: number;
  busPerInstancePerSecond: number;
  busPerEvent: number;
  unheldShare: number;
  cpuPerFrameUs: number;
  ackP99: number;
  durable: number;
  /** Why the point was not measured. */
  failed?: string;
}

const counters = async (port: number): Promise<Counters> =>
  ((await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as { fanout: Counters }).fanout;

async function measure(
  n: number,
  users: number,
  seconds: number,
  stack: Awaited<ReturnType<typeof startStack>>,
  dir: string,
): Promise<Point> {
  const env = { ...stack.env, LIVE_WORKERS: '1' };
  const servers = await Promise.all(Array.from({ length: n }, () => startLive(env)));
  try {
    const url = (i: number) => `ws://127.0.0.1:${servers[i % n].port}/ws`;
    const made = await makeRecordings(stack.db, n * users);
    // User j lives on instance j % n; every REMOTE_VIEWER_EVERY-th user of each instance also has a tab on the next.
    const recordings: Plan['recordings'] = made.map((r, j) => ({
      ...r,
      wsUrl: url(j),
      viewers: Math.floor(j / n) % REMOTE_VIEWER_EVERY === 0 ? [url(j), url(j + 1)] : [url(j)],
    }));
    const planFile = path.join(dir, `plan-${n}.json`);
    writeFileSync(planFile, JSON.stringify({ mode: 'live', seconds, recordings } satisfies Plan));
    const load = child(['load', planFile], env);
    await load.line('sending');
    const pids = servers.map((s) => s.server.proc.pid!);
    const from = {
      counters: await Promise.all(servers.map((s) => counters(s.port))),
      cpu: pids.map(treeCpuMs),
      at: performance.now(),
    };
    const result = (await load.line('result')).result as LoadResult;
    const to = {
      counters: await Promise.all(servers.map((s) => counters(s.port))),
      cpu: pids.map(treeCpuMs),
      at: performance.now(),
    };
    await stopChild(load);
    const sum = (k: keyof Counters) => to.counters.reduce((t, c, i) => t + c[k] - from.counters[i][k], 0);
    const wallS = (to.at - from.at) / 1000;
    const cpuMs = to.cpu.reduce((t, c, i) => t + c - from.cpu[i], 0);
    return {
      instances: n,
      eventsPerSecond: sum('eventsProduced') / wallS,
      busPerInstancePerSecond: sum('busMessages') / n / wallS,
      busPerEvent: sum('busMessages') / Math.max(1, sum('eventsProduced')),
      unheldShare: sum('busMessagesUnheld') / Math.max(1, sum('busMessages')),
      cpuPerFrameUs: (cpuMs / Math.max(1, result.acked)) * 1000,
      ackP99: percentile(result.ackMs, 99),
      durable: result.acked / Math.max(1, result.sent),
    };
  } finally {
    await Promise.all(servers.map((s) => stopChild(s.server)));
  }
}

const rowOf = (p: Point): Row =>
  p.failed
    ? { instances: p.instances, 'bus messages per event': `not measured: ${p.failed}` }
    : {
        instances: p.instances,
        'bus messages per event': p.busPerEvent.toFixed(2),
        'of them for no user held': `${(p.unheldShare * 100).toFixed(0)} %`,
        'ack p99': ms(p.ackP99),
        'durable / offered': p.durable.toFixed(3),
      };

/** The broadcast baseline of a measured point: every instance receives every event the fleet produced. */
const broadcastRowOf = (p: Point): Row =>
  p.failed
    ? { instances: p.instances, 'bus messages / s per instance': `not measured: ${p.failed}` }
    : {
        instances: p.instances,
        'bus messages / s per instance': p.eventsPerSecond.toFixed(1),
        'bus messages per event': p.instances.toFixed(2),
      };

async function main(): Promise<void> {
  const users = Number(process.env.BENCH_USERS ?? 8);
  const seconds = Number(process.env.BENCH_SECONDS ?? 15);
  const dir = mkdtempSync(path.join(tmpdir(), 'mi-bench-fanout-'));
  const stack = await startStack();
  try {
    await measure(1, 5, 3, stack, dir); // warm-up, not reported
    const points: Point[] = [];
    for (const n of FLEETS) {
      // A size that fails (the machine too loaded to start it) is reported as such; the rest still run.
      const p = await measure(n, users, seconds, stack, dir).catch(
        (err: Error) => ({ instances: n, failed: err.message }) as Point,
      );
      points.push(p);
      // On stdout only: messages per second (paced by the shared machine) and CPU per durable frame
      // (all instances, unpinned: not comparable with bench:live).
      console.log(
        `×${n}: ${JSON.stringify(rowOf(p))}${p.failed ? '' : `, ${p.busPerInstancePerSecond.toFixed(1)} bus messages/s per instance, CPU per durable frame ${p.cpuPerFrameUs.toFixed(0)} µs`}`,
      );
    }
    const at = (n: number) => points.find((p) => p.instances === n && !p.failed);
    /** A figure at 8 instances against 2; NaN where either was not measured. */
    const ratio = (figure: (p: Point) => number) => {
      const [top, bottom] = [at(8), at(2)];
      return top && bottom ? figure(top) / figure(bottom) : NaN;
    };
    const times = (x: number) => (Number.isFinite(x) ? `${x.toFixed(2)}×` : 'not measured');
    // Per event produced: the load-independent form of "per instance per second" (every instance
    // produces at the same rate), so the machine's pace in each window does not enter the ratio.
    const perEvent = (p: Point) => p.busPerEvent;
    const perSecond = (p: Point) => p.busPerInstancePerSecond;
    // Broadcast's figures, derived from the same point: every instance receives every event of the fleet.
    const broadcastPerEvent = (p: Point) => p.instances;
    const broadcastPerSecond = (p: Point) => p.eventsPerSecond;
    const t = (figure: (p: Point) => number) => times(ratio(figure));
    const body = [
      `fan-out: ${t(perEvent)} bus messages per instance at 8 instances against 2`,
      `per instance per second, at 8 against 2: targeted ${t(perSecond)}, ` +
        `broadcast ${t(broadcastPerSecond)}; broadcast per event produced: ${t(broadcastPerEvent)}`,
      '',
      [
        'Against 2 instances, not 1: one instance alone receives no bus message. Per event: the',
        "fleet's bus messages per event produced, free of the shared machine's pace.",
        `${users} users per instance, ${seconds} s per point; ${stack.engineLabel}. Method: bench/fanout.ts.`,
      ].join(' '),
      '',
      '**Targeted (the deployed design)**',
      '',
      table(points.map(rowOf)),
      '',
      '**Broadcast (the design before; derived from the same windows: every instance receives every event the fleet produced)**',
      '',
      table(points.map(broadcastRowOf)),
    ].join('\n');
    console.log(`\n${body}`);
    writeSection('Fan-out', body, path.join(ROOT, 'BENCHMARKS.md'));
  } finally {
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
