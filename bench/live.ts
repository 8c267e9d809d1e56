// `npm run bench:live`: how many live recordings one core holds, and what a recording-hour costs.
// N concurrent recordings at 10 frames/s (16 kHz PCM, 3,200 bytes a frame) against one live
// instance pinned to a core of its own (`taskset`), everything else (the load generator,
// database, emulators, an ML sink) on the others. The primary figure is the server's CPU time
// (/proc, all threads) per durable frame, against a bare `ws` server's CPU time per received
// frame under the same load in the same run: a ratio that holds on a noisy machine. Capacity is
// the largest N (searched) at which ack p99 ≤ 2.5 s and durable/offered ≥ 0.99 hold; the CPU of
// every process there says whether the server or a dependency was the limit. Ack: frame sent →
// the first progress event covering it (one per 2 s segment). Capacity is searched by doubling
// from 50, then bisecting.
// The live server is the deployable bundle (`npm run build`'s) with the container's telemetry
// preload, on the container's Node (24); the load generator, the bare server and the ML sink are
// the roles of bench/live-roles.ts, the processes are started by bench/live-processes.ts.
// BENCH_RECORDINGS (comma list: measure these instead of searching), BENCH_SECONDS (default 20),
// BENCH_MAX (search ceiling, default 1000), BENCH_WORKERS (default 1: LIVE_WORKERS of the server;
// more are not pinned), BENCH_CHANGES=1 (the per-change table instead: CHANGES below, at the
// first of BENCH_RECORDINGS or 300), BENCH_NODE (the servers' Node), BENCH_LOG_LEVEL (the
// server's, default error), BENCH_PROFILE=<dir> (a CPU profile of the server).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { sleep } from '@mi/lib/async';
import type { Database } from '@mi/lib/db/pool';
import { coreBusyMs, cpuByGroup, treeCpuMs, treeRssBytes } from './process-cpu';
import type { LoadResult, Plan } from './live-roles';
import {
  child,
  makeRecordings,
  pinRest,
  ROOT,
  SERVER_CORE,
  serverNode,
  startLive,
  startStack,
  stopChild,
  type Child,
} from './live-processes';
import { memoryLine, processTable, row, type Measured } from './live-report';
import { percentile, table, writeSection, type Row } from './report';

const WARM_UP_RECORDINGS = 10;
/** The targets a load must meet to be held. */
const ACK_P99_MS = 2500;
const MIN_DURABLE = 0.99;

/** One change to the server's CPU per frame, undone: what the per-change table measures. */
interface Change {
  name: string;
  env?: Record<string, string>;
  preload?: boolean;
}

/** BENCH_CHANGES=1: the build as it is, then each change undone alone, in alternating rounds. */
const CHANGES: Change[] = [
  { name: 'as built' },
  { name: 'ML frames written one by one (LIVE_ML_FORWARD_MS=0)', env: { LIVE_ML_FORWARD_MS: '0' } },
  { name: 'without the telemetry preload', preload: false },
];
const CHANGE_ROUNDS = 3;

async function orchestrate(): Promise<void> {
  const explicit = process.env.BENCH_RECORDINGS?.split(',').map(Number);
  const seconds = Number(process.env.BENCH_SECONDS ?? 20);
  const max = Number(process.env.BENCH_MAX ?? 1000);
  const workers = Number(process.env.BENCH_WORKERS ?? 1);
  const pinned = pinRest(workers);
  const node = serverNode();
  const nodeVersion = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  const dir = mkdtempSync(path.join(tmpdir(), 'mi-bench-live-'));
  const stack = await startStack();
  try {
    const { db, named } = stack;
    const env = { ...stack.env, LIVE_WORKERS: String(workers) };
    const run = async (n: number, mode: 'live' | 'bare', secs = seconds, change?: Change) =>
      measure(n, mode, await makeRecordings(db, n), secs, env, dir, { pinned, named, node, change });

    // A first, unreported round warms up the emulators, the JIT and the caches.
    await run(WARM_UP_RECORDINGS, 'live', 5);
    if (process.env.BENCH_CHANGES) {
      const n = explicit?.[0] ?? 300;
      const cpu = new Map<Change, number[]>(CHANGES.map((c) => [c, []]));
      const bare: number[] = [];
      for (let round = 0; round < CHANGE_ROUNDS; round++) {
        for (const change of CHANGES) {
          const m = await run(n, 'live', seconds, change);
          cpu.get(change)!.push(m.cpuMs / m.frames);
          console.log(`${change.name}: ${((m.cpuMs / m.frames) * 1000).toFixed(0)} µs/frame`);
        }
        const b = await run(n, 'bare');
        bare.push(b.cpuMs / b.frames);
      }
      const base = percentile(cpu.get(CHANGES[0])!, 50);
      const bareMedian = percentile(bare, 50);
      const changeRows: Row[] = CHANGES.map((c) => {
        const v = percentile(cpu.get(c)!, 50);
        return {
          build: c.name,
          'server CPU/frame (median)': `${(v * 1000).toFixed(0)} µs`,
          'vs as built': (v / base).toFixed(2),
          'vs bare ws': (v / bareMedian).toFixed(2),
        };
      });
      const body = [
        `${n} recordings for ${seconds} s, pinned as in "Live"; medians of ${CHANGE_ROUNDS} alternating rounds, each row undoing one change; bare \`ws\` ${(bareMedian * 1000).toFixed(0)} µs/frame. Node ${nodeVersion}; ${stack.engineLabel}.`,
        '',
        table(changeRows),
      ].join('\n');
      console.log(`\n${body}`);
      writeSection('Live: per change', body, path.join(ROOT, 'BENCHMARKS.md'));
      return;
    }
    const rows: Row[] = [];
    const held = (m: Measured) =>
      percentile(m.result.ackMs, 99) <= ACK_P99_MS && m.result.acked / m.result.sent >= MIN_DURABLE;
    const measured = new Map<number, Measured>();
    const bareAt = new Map<number, Measured>();
    const step = async (n: number) => {
      const live = await databaseWrites(db, () => run(n, 'live'));
      const bare = await run(n, 'bare');
      measured.set(n, live);
      bareAt.set(n, bare);
      rows.push(row(live, bare, held(live)));
      if (Object.keys(live.result.problems).length)
        console.log(`${n} recordings: ${JSON.stringify(live.result.problems)}`);
      console.log(table(rows.slice(-1)));
      return held(live);
    };
    // Capacity: double from 50 until a load is not held, then halve the interval down to 10 %.
    let capacity = 0;
    let failedAt = 0;
    if (explicit) {
      for (const n of explicit) if ((await step(n)) && n > capacity) capacity = n;
      failedAt = explicit.find((n) => n > capacity && measured.has(n)) ?? 0;
    } else {
      for (let n = 50; ; n = Math.min(max, n * 2)) {
        if (!(await step(n))) {
          failedAt = n;
          break;
        }
        capacity = n;
        if (n >= max) break;
      }
      while (failedAt && failedAt - capacity > Math.max(10, capacity / 10)) {
        const n = Math.round((capacity + failedAt) / 2 / 10) * 10;
        if (await step(n)) capacity = n;
        else failedAt = n;
      }
    }
    rows.sort((a, b) => Number(a.recordings) - Number(b.recordings));
    const at = measured.get(capacity);
    const over = measured.get(failedAt);
    const cpuPerFrame = at ? at.cpuMs / at.frames : NaN;
    const bare = bareAt.get(capacity);
    const ratio = bare ? cpuPerFrame / (bare.cpuMs / bare.frames) : NaN;
    const body = [
      `capacity: ${capacity ? `${capacity} recordings` : `none of the loads measured (below ${failedAt} recordings)`} per ${workers > 1 ? `instance of ${workers} workers` : 'core'} (ack p99 ≤ ${ACK_P99_MS / 1000} s, durable/offered ≥ ${MIN_DURABLE})${capacity >= max ? ` (the search's ceiling: ${max})` : ''}`,
      '',
      at ? `ratio to bare ws at capacity: ${ratio.toFixed(2)}× (server CPU per durable frame / bare ws per frame)` : '',
      '',
      firestoreLine(at ?? [...measured.values()].at(-1)!),
      '',
      `${seconds} s of 10 frames/s per recording; the deployable (Node ${nodeVersion}, LIVE_WORKERS=${workers}, ${pinned ? `pinned to core ${SERVER_CORE}` : 'not pinned'}) against a bare \`ws\` server; ${stack.engineLabel}. CPU/frame: server CPU per durable frame; ack: frame sent → progress event covering it. Method: bench/live.ts.`,
      '',
      table(rows),
      '',
      memoryLine([...measured.values()]),
      '',
      at
        ? `Cost: ${((cpuPerFrame * 36_000) / 1000).toFixed(1)} vCPU-seconds of server CPU per recording-hour; ${workers > 1 ? `an instance of ${workers} vCPU` : 'a core'} provisioned for ${capacity} recordings: ${((3600 * workers) / capacity).toFixed(1)}.`
        : '',
      '',
      processTable(at, over),
    ].join('\n');
    console.log(`\n${body}`);
    writeSection(workers > 1 ? `Live (${workers} workers)` : 'Live', body, path.join(ROOT, 'BENCHMARKS.md'));
  } finally {
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * What the database wrote during one live load: WAL bytes (pg_current_wal_lsn before and after,
 * the whole cluster: the bench's own) and the segment_manifest and event_outbox rows inserted,
 * per recording-minute of frames sent. docs/capacity.md scales these to the fleet.
 */
async function databaseWrites(db: Database, load: () => Promise<Measured>): Promise<Measured> {
  const sample = async () =>
    (
      await db.query<{ lsn: string; manifest: string; outbox: string }>(
        'bench_live_wal',
        `SELECT pg_current_wal_lsn()::text AS lsn, (SELECT count(*) FROM segment_manifest) AS manifest,
                (SELECT count(*) FROM event_outbox) AS outbox`,
      )
    ).rows[0];
  const before = await sample();
  const m = await load();
  const after = await sample();
  const { bytes } = (
    await db.query<{ bytes: number }>('bench_live_wal_diff', 'SELECT pg_wal_lsn_diff($1, $2)::float8 AS bytes', [
      after.lsn,
      before.lsn,
    ])
  ).rows[0];
  const minutes = m.result.sent / 600; // 10 frames a second
  const perSecond = (rows: number) => (rows / (minutes * 60)).toFixed(2);
  console.log(
    `wal: ${(bytes / 1024 / minutes).toFixed(1)} KB per recording-minute; rows per recording-second: ` +
      `segment_manifest ${perSecond(Number(after.manifest) - Number(before.manifest))}, ` +
      `event_outbox ${perSecond(Number(after.outbox) - Number(before.outbox))} (${m.n} recordings)`,
  );
  return m;
}

/** One load against the live server (or the bare one); bench:upgrade measures with it too. */
export async function measure(
  n: number,
  mode: 'live' | 'bare',
  recordings: { token: string; meetingId: string }[],
  seconds: number,
  env: Record<string, string | undefined>,
  dir: string,
  o: { pinned: boolean; named: Record<string, number | undefined>; node: string; change?: Change; script?: string },
): Promise<Measured> {
  // BENCH_PROFILE=<dir>: a CPU profile of the live server process.
  const nodeFlags = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  const core = o.pinned ? SERVER_CORE : undefined;
  let port: number;
  let server: Child;
  if (mode === 'live') {
    // As the container runs it: with the telemetry preload (Dockerfile CMD), unless a change leaves it out.
    ({ server, port } = await startLive(
      { ...env, ...o.change?.env },
      { nodeFlags, core, node: o.node, preload: o.change?.preload, script: o.script },
    ));
  } else {
    server = child(['bare'], env, { core, node: o.node });
    port = (await server.line('ready')).ready as number;
  }
  await sleep(1000);
  const pid = server.proc.pid!;
  const baseRss = treeRssBytes(pid);
  const planFile = path.join(dir, `plan-${mode}-${n}.json`);
  const wsUrl = `ws://127.0.0.1:${port}/ws`;
  writeFileSync(
    planFile,
    JSON.stringify({ mode, seconds, recordings: recordings.map((r) => ({ ...r, wsUrl })) } satisfies Plan),
  );
  const load = child(['load', planFile], env);
  await load.line('sending');
  const named = { ...o.named, server: pid, 'load generator': load.proc.pid };
  const writesFrom = mode === 'live' ? await firestoreWrites(port) : 0;
  const from = { cpu: treeCpuMs(pid), groups: cpuByGroup(named), cores: coreBusyMs(), at: performance.now() };
  let peakRss = baseRss;
  const rssTimer = setInterval(() => (peakRss = Math.max(peakRss, treeRssBytes(pid))), 1000);
  const result = (await load.line('result')).result as LoadResult;
  const to = { cpu: treeCpuMs(pid), groups: cpuByGroup(named), cores: coreBusyMs(), at: performance.now() };
  const writes = mode === 'live' ? (await firestoreWrites(port)) - writesFrom : 0;
  clearInterval(rssTimer);
  if (mode === 'bare') await sleep(1200); // one more count, after the last frame
  await stopChild(load);
  await stopChild(server);
  const groups = new Map([...to.groups].map(([g, v]) => [g, v - (from.groups.get(g) ?? 0)]));
  return {
    n,
    mode,
    result,
    frames: mode === 'live' ? result.acked : Math.max(0, ...server.counts),
    cpuMs: to.cpu - from.cpu,
    wallMs: to.at - from.at,
    groups,
    cores: to.cores.map((ms, c) => ms - (from.cores[c] ?? 0)),
    rssPerRecording: (peakRss - baseRss) / n,
    firestoreWrites: writes,
  };
}

/** The Firestore documents the live server's heartbeats wrote so far (its /healthz). */
async function firestoreWrites(port: number): Promise<number> {
  const health = (await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as {
    firestore_writes?: { heartbeat: number };
  };
  return health.firestore_writes?.heartbeat ?? 0; // an earlier release's bundle (BENCH_LIVE_BUNDLE) counts none
}

/**
 * Firestore documents written per recording-hour at 400 recordings per instance (issue 40's
 * target): the heartbeats' writes in the window are the instance's whatever it holds, so they
 * are spread over 400; plus each take's lease writes (acquire, release: 2, one take an hour) and
 * each connection's presence writes (add, remove: 2 per LIVE_CONNECTION_LIFETIME_SECONDS, 3,300 s
 * by default), counted per event by lib/adapters/coordination.test.ts.
 */
function firestoreLine(m: Measured): string {
  const perInstanceHour = (m.firestoreWrites / m.wallMs) * 3_600_000;
  const perHour = perInstanceHour / 400 + 2 + (2 * 3600) / 3300;
  return `firestore: ${perHour.toFixed(1)} document writes per recording-hour (at 400 recordings per instance; measured at ${m.n}: ${m.firestoreWrites} heartbeat writes in the ${(m.wallMs / 1000).toFixed(0)} s window, ${perInstanceHour.toFixed(0)} per instance-hour, plus 2 per take and 2 per connection)`;
}

// Run as `npm run bench:live`; imported (bench:upgrade), it only lends its measurement.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await orchestrate();
