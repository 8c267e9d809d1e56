// `npm run bench:live`: how many live recordings one core holds, and what a recording-hour costs.
// N concurrent recordings at 10 frames/s (16 kHz PCM, 3,200 bytes a frame) against one live
// instance pinned to a core of its own (`taskset`), everything else (the load generator,
// database, emulators, an ML sink) on the others. The primary figure is the server's CPU time
// (/proc, all threads) per durable frame, against a bare `ws` server's CPU time per received
// frame under the same load in the same run: a ratio that holds on a noisy machine. Capacity is
// the largest N (searched) at which ack p99 ≤ 2.5 s and durable/offered ≥ 0.99 hold; the CPU of
// every process there says whether the server or a dependency was the limit.
// The live server is the deployable bundle (`npm run build`'s) with the container's telemetry
// preload, on the container's Node (24); this file plays the other roles: (none) orchestrates,
// `bare` / `load` / `ml` are its children.
// BENCH_RECORDINGS (comma list: measure these instead of searching), BENCH_SECONDS (default 20),
// BENCH_MAX (search ceiling, default 1000), BENCH_WORKERS (default 1: LIVE_WORKERS of the server;
// more are not pinned), BENCH_CHANGES=1 (the per-change table instead: CHANGES below, at the
// first of BENCH_RECORDINGS or 300), BENCH_NODE (the servers' Node), BENCH_LOG_LEVEL (the
// server's, default error), BENCH_PROFILE=<dir> (a CPU profile of the server).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import WebSocket, { WebSocketServer } from 'ws';
import { sleep, withTimeout } from '@mi/lib/async';
import { mintDevToken } from '@mi/lib/adapters/auth';
import { createTestDatabase, startTestEngine } from '../test/support/database';
import { createDatabase, type Database } from '@mi/lib/db/pool';
import { createMeeting } from '@mi/lib/repositories/meetings';
import { findOrCreateUser } from '@mi/lib/repositories/users';
import { createObjectStore } from '@mi/lib/adapters/storage';
import { buildAll } from '../scripts/build';
import { freePort, startFirestoreEmulator, startPubsubEmulator } from '../emulators/gcloud';
import { cpuByGroup, treeCpuMs, treeRssBytes } from './process-cpu';
import { postmasterPid } from './server-cpu';
import { ms, percentile, table, writeSection, type Row } from './report';

const SELF = fileURLToPath(import.meta.url);
const ROOT = path.resolve(path.dirname(SELF), '..');
const FRAME_BYTES = 3200;
const FRAME_MS = 100;
const SECRETS = { IDENTITY_SECRET_KEY: 'bench-identity-secret-0123456789', SERVICE_AUTH_TOKEN: 'bench-service-token-0123456789ab' };
const WARM_UP_RECORDINGS = 10;
/** Progress per stored segment (2 s): what frame→durable-ack can be measured against. */
const SEGMENT_MS = 2000;
const BENCH_RECORDING_ENV = { RECORDING_SEGMENT_TARGET_MS: String(SEGMENT_MS), RECORDING_PROGRESS_EVERY_FRAMES: '20', LIVE_MAX_CONNECTIONS_PER_USER: '20' };
/** The targets a load must meet to be held. */
const ACK_P99_MS = 2500;
const MIN_DURABLE = 0.99;
/** How long the load waits for the last acknowledgements after its last frame. */
const DRAIN_MS = 15_000;
const SERVER_CORE = 1;
const START_TIMEOUT_MS = 60_000;
const LIVE_BUNDLE = path.join(ROOT, 'run-services/live/dist/server.js');
const TELEMETRY_PRELOAD = path.join(ROOT, 'run-services/live/dist/telemetry-register.js');

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

interface Plan {
  wsUrl: string;
  mode: 'live' | 'bare';
  seconds: number;
  recordings: { token: string; meetingId: string }[];
}

interface LoadResult {
  /** What went wrong, by error code or close code. */
  problems: Record<string, number>;
  sent: number;
  acked: number;
  ackMs: number[];
}

const role = process.argv[2];
if (role === 'bare') await bareRole();
else if (role === 'ml') await mlRole();
else if (role === 'load') await loadRole(JSON.parse(readFileSync(process.argv[3], 'utf8')) as Plan);
else await orchestrate();

// --- children -----------------------------------------------------------------------------------

async function bareRole(): Promise<void> {
  let frames = 0;
  const server = createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ server, perMessageDeflate: false });
  wss.on('connection', (ws) => ws.on('message', (_d, isBinary) => void (isBinary && frames++)));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  // The count, once a second (the orchestrator takes the last).
  setInterval(() => console.log(JSON.stringify({ frames })), 1000);
  console.log(JSON.stringify({ ready: (server.address() as AddressInfo).port }));
  process.once('SIGTERM', () => process.exit(0));
}

async function loadRole(plan: Plan): Promise<void> {
  const payload = Buffer.alloc(FRAME_BYTES);
  for (let i = 0; i < FRAME_BYTES / 2; i++) payload.writeInt16LE(Math.round(8000 * Math.sin(i / 5)), i * 2);
  const ackMs: number[] = [];
  const problems: Record<string, number> = {};
  const problem = (what: string) => void (problems[what] = (problems[what] ?? 0) + 1);
  let sent = 0;
  let acked = 0;

  const sessions = await Promise.all(
    plan.recordings.map(async (r, i) => {
      const ws = new WebSocket(plan.wsUrl, { perMessageDeflate: false });
      await new Promise<void>((resolve, reject) => (ws.once('open', () => resolve()), ws.once('error', reject)));
      ws.on('close', (code) => problem(`close ${code}`));
      const sentAt: number[] = [];
      let ackedUpTo = -1;
      const started = new Promise<void>((resolve) => {
        ws.on('message', (data) => {
          const m = JSON.parse(String(data)) as { type: string; highest_contiguous_sequence?: number; meeting_id?: string; code?: string };
          if (m.type === 'RecordingStarted') resolve();
          if (m.type === 'error' || m.type === 'RecordingHealth') problem(`${m.type} ${m.code}`);
          if (m.type === 'AudioStoredProgressEvent' && m.meeting_id === r.meetingId) {
            const now = Date.now();
            for (let s = ackedUpTo + 1; s <= m.highest_contiguous_sequence!; s++) if (sentAt[s]) ackMs.push(now - sentAt[s]), acked++;
            ackedUpTo = Math.max(ackedUpTo, m.highest_contiguous_sequence!);
          }
        });
      });
      if (plan.mode === 'live') {
        ws.send(JSON.stringify({ type: 'hello', token: r.token, client_id: randomUUID() }));
        ws.send(JSON.stringify({ type: 'StartRecordingCommand', meeting_id: r.meetingId, encoding: 'pcm_s16le', sample_rate: 16000 }));
        // A take that does not start is a failed run, not a hang.
        await withTimeout(started, START_TIMEOUT_MS).catch(() => {
          throw new Error(`recording ${i} did not start within ${START_TIMEOUT_MS} ms; problems so far: ${JSON.stringify(problems)}`);
        });
      }
      // Recordings start spread over one segment period, as independent users' do: their segments
      // fall due one after another, not all in the same 100 ms.
      return { ws, sentAt, offset: (i * SEGMENT_MS) / plan.recordings.length };
    }),
  );

  // The measured window starts with the first frame: take starts are not per-frame work.
  console.log(JSON.stringify({ sending: true }));
  // Every recording then sends a frame every 100 ms.
  const t0 = Date.now();
  const frames = (plan.seconds * 1000) / FRAME_MS;
  await Promise.all(
    sessions.map(async (s) => {
      await sleep(s.offset);
      for (let seq = 0; seq < frames; seq++) {
        const header = Buffer.alloc(8);
        header.writeBigUInt64BE(BigInt(seq));
        s.sentAt[seq] = Date.now();
        s.ws.send(Buffer.concat([header, payload]));
        sent++;
        await sleep(Math.max(0, t0 + s.offset + (seq + 1) * FRAME_MS - Date.now()));
      }
    }),
  );
  if (plan.mode === 'live') {
    const deadline = Date.now() + DRAIN_MS;
    while (acked < sent && Date.now() < deadline) await sleep(100);
  }
  const result: LoadResult = { problems, sent, acked, ackMs };
  for (const s of sessions) s.ws.terminate();
  // Exit once the (large) line is out: a pipe write is asynchronous.
  process.stdout.write(`${JSON.stringify({ result })}\n`, () => process.exit(0));
}

/** A stand-in ML service that takes sessions and drops their frames (its own process: it must not slow the database down). */
async function mlRole(): Promise<void> {
  const server = createServer((req: IncomingMessage, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method === 'POST') {
        const id = randomUUID();
        const { port } = server.address() as AddressInfo;
        res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ id, audio_url: `ws://127.0.0.1:${port}/streaming/${id}/audio` }));
      } else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ drained: true, processed: 0, dropped: 0 }));
    });
  });
  new WebSocketServer({ server, perMessageDeflate: false }).on('connection', (ws) => ws.on('message', () => undefined));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  console.log(JSON.stringify({ ready: (server.address() as AddressInfo).port }));
}

// --- orchestration ------------------------------------------------------------------------------

interface Child {
  proc: ChildProcess;
  /** Resolves with the first line that has this key. */
  line(key: 'ready' | 'sending' | 'result'): Promise<Record<string, unknown>>;
  /** The bare server's frame counts, a second apart. */
  counts: number[];
}

/** A role of this file, or with `script` that file (the live service's bundle). */
function child(args: string[], env: Record<string, string | undefined>, o: { nodeFlags?: string[]; core?: number; script?: string; node?: string } = {}): Child {
  const node = o.node ?? process.execPath;
  const argv = [...(o.nodeFlags ?? []), ...(o.script ? [o.script] : ['--import', 'tsx', SELF]), ...args];
  const proc = o.core === undefined ? spawn(node, argv, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] }) : spawn('taskset', ['-c', String(o.core), node, ...argv], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
  const counts: number[] = [];
  const waiters = new Map<string, (v: Record<string, unknown>) => void>();
  const seen = new Map<string, Record<string, unknown>>();
  const died = new Promise<never>((_, reject) => proc.once('close', (code) => reject(new Error(`bench ${args[0]} exited with ${code}`))));
  died.catch(() => undefined); // whichever line nobody awaits
  createInterface({ input: proc.stdout! }).on('line', (text) => {
    let m: Record<string, unknown>;
    try {
      m = JSON.parse(text);
    } catch {
      return;
    }
    // The live service logs JSON on stdout (BENCH_LOG_LEVEL): its warnings and errors are shown.
    if (m.severity) return void console.error(text);
    if (typeof m.frames === 'number') counts.push(m.frames);
    for (const key of Object.keys(m)) {
      if (seen.has(key)) continue;
      seen.set(key, m);
      waiters.get(key)?.(m);
    }
  });
  const line: Child['line'] = (key) => seen.has(key) ? Promise.resolve(seen.get(key)!) : Promise.race([new Promise<Record<string, unknown>>((r) => waiters.set(key, r)), died]);
  return { proc, counts, line };
}

/** Until the live service answers /healthz (it has started). */
async function waitHealthy(port: number, server: Child): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (server.proc.exitCode !== null) throw new Error(`the live service exited with ${server.proc.exitCode}`);
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false);
    if (ok) return;
    await sleep(100);
  }
  throw new Error('the live service did not start');
}

async function stopChild(c: Child): Promise<void> {
  if (c.proc.exitCode !== null) return;
  const exited = new Promise((r) => c.proc.once('exit', r));
  c.proc.kill('SIGTERM');
  await Promise.race([exited, sleep(10_000)]);
  if (c.proc.exitCode === null) c.proc.kill('SIGKILL');
}

/**
 * The Node the container runs (node:24-slim) for the live and the bare server: BENCH_NODE, else
 * npm's `node@24` package (as .ci/node-lts), else this one.
 */
function serverNode(): string {
  if (process.env.BENCH_NODE) return process.env.BENCH_NODE;
  const found = spawnSync('npm', ['exec', '--yes', '--package=node@24', '--', 'node', '-p', 'process.execPath'], { encoding: 'utf8' });
  return found.status === 0 && found.stdout.trim() ? found.stdout.trim() : process.execPath;
}

/** Pins this process (and so every process it starts) to every core but the server's. */
function pinRest(workers: number): boolean {
  const cores = availableParallelism();
  if (workers > 1 || cores < 2 || spawnSync('taskset', ['-V']).status !== 0) return false;
  const others = Array.from({ length: cores }, (_, i) => i).filter((c) => c !== SERVER_CORE);
  return spawnSync('taskset', ['-a', '-cp', others.join(','), String(process.pid)]).status === 0;
}

interface Measured {
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
  rssPerRecording: number;
}

async function orchestrate(): Promise<void> {
  const explicit = process.env.BENCH_RECORDINGS?.split(',').map(Number);
  const seconds = Number(process.env.BENCH_SECONDS ?? 20);
  const max = Number(process.env.BENCH_MAX ?? 1000);
  const workers = Number(process.env.BENCH_WORKERS ?? 1);
  const pinned = pinRest(workers);
  const node = serverNode();
  const nodeVersion = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  const dir = mkdtempSync(path.join(tmpdir(), 'mi-bench-live-'));
  const stops: (() => Promise<unknown>)[] = [];
  try {
    await buildAll();
    const [pubsub, firestore] = await Promise.all([startPubsubEmulator(), startFirestoreEmulator()]);
    stops.push(pubsub.stop, firestore.stop);
    const gcsPort = await freePort();
    const gcs = spawn(process.execPath, ['--import', 'tsx', 'emulators/gcs/main.ts', '--port', String(gcsPort)], { cwd: ROOT, stdio: 'ignore' });
    stops.push(async () => gcs.kill('SIGTERM'));
    // The test engine: native PostgreSQL when installed, else PGlite (TEST_DATABASE chooses).
    const engine = await startTestEngine();
    stops.push(engine.stop);
    const pg = await createTestDatabase(engine.engine);
    const ml = child(['ml'], process.env);
    stops.push(() => stopChild(ml));
    const mlUrl = `http://127.0.0.1:${(await ml.line('ready')).ready}`;

    const env: Record<string, string | undefined> = {
      ...process.env,
      APP_ENV: 'test',
      LOG_LEVEL: 'error',
      ...SECRETS,
      ...BENCH_RECORDING_ENV,
      LIVE_WORKERS: String(workers),
      DATABASE_URL: pg.url,
      PUBSUB_EMULATOR_HOST: pubsub.host,
      FIRESTORE_EMULATOR_HOST: firestore.host,
      STORAGE_EMULATOR_HOST: `http://127.0.0.1:${gcsPort}`,
      STORAGE_BUCKET: 'bench-live',
      PUBSUB_TOPIC_EVENTS: `bench-events-${randomUUID().slice(0, 8)}`,
      ML_SERVICE_URL: mlUrl,
    };
    const store = createObjectStore({ bucket: 'bench-live', emulatorHost: env.STORAGE_EMULATOR_HOST });
    for (let i = 0; ; i++) {
      try {
        await store.ensureBucket();
        break;
      } catch (err) {
        if (i > 50) throw err;
        await sleep(200); // the GCS emulator is still starting
      }
    }
    const db = createDatabase(pg.url);
    stops.push(() => db.close());
    const named = { 'GCS emulator': gcs.pid, 'ML sink': ml.proc.pid, PostgreSQL: (await postmasterPid(engine.engine, db)) ?? undefined };
    const run = async (n: number, mode: 'live' | 'bare', secs = seconds, change?: Change) => measure(n, mode, await makeRecordings(db, n), secs, env, dir, { pinned, named, node, change });

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
        return { build: c.name, 'server CPU/frame (median)': `${(v * 1000).toFixed(0)} µs`, 'vs as built': (v / base).toFixed(2), 'vs bare ws': (v / bareMedian).toFixed(2) };
      });
      const body = [
        `${n} recordings for ${seconds} s, the server pinned as in "Live"; each build ${CHANGE_ROUNDS} times in alternating rounds (medians), each row undoing one change alone; the bare \`ws\` server measured in every round (${(bareMedian * 1000).toFixed(0)} µs/frame). Node ${nodeVersion}; ${engine.engine.label}.`,
        '',
        table(changeRows),
      ].join('\n');
      console.log(`\n${body}`);
      writeSection('Live: per change', body, path.join(ROOT, 'BENCHMARKS.md'));
      return;
    }
    const rows: Row[] = [];
    const held = (m: Measured) => percentile(m.result.ackMs, 99) <= ACK_P99_MS && m.result.acked / m.result.sent >= MIN_DURABLE;
    const measured = new Map<number, Measured>();
    const step = async (n: number) => {
      const live = await run(n, 'live');
      const bare = await run(n, 'bare');
      measured.set(n, live);
      rows.push(row(live, bare, held(live)));
      if (Object.keys(live.result.problems).length) console.log(`${n} recordings: ${JSON.stringify(live.result.problems)}`);
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
    const body = [
      `capacity: ${capacity ? `${capacity} recordings` : `none of the loads measured (below ${failedAt} recordings)`} per ${workers > 1 ? `instance of ${workers} workers` : 'core'} (ack p99 ≤ ${ACK_P99_MS / 1000} s, durable/offered ≥ ${MIN_DURABLE})${capacity >= max ? ` (the search's ceiling: ${max})` : ''}`,
      '',
      `${seconds} s of 10 frames/s per recording (3,200-byte PCM frames) against the live service's deployable (\`run-services/live/dist/server.js\` with the container's telemetry preload, on Node ${nodeVersion}${nodeVersion.startsWith('v24.') ? ' as in the node:24-slim image' : ''}${workers > 1 ? `, LIVE_WORKERS=${workers}` : ', LIVE_WORKERS=1'}${pinned ? `, pinned to core ${SERVER_CORE} with \`taskset\`; everything else pinned to the other cores` : ', not pinned'}), then the same load against a bare \`ws\` server that only counts frames. ${engine.engine.label} as the database, the gcloud Pub/Sub and Firestore emulators, the in-repo GCS emulator (in memory) and an ML sink run in other processes on the same machine.`,
      '',
      `CPU/frame: the server's CPU time (/proc utime + stime, all threads${workers > 1 ? ', all workers' : ''}) from the first frame to the last acknowledgement, per durable frame (covered by an AudioStoredProgressEvent); for the bare server, per received frame; ratio: live / bare. Ack: frame sent → first progress event covering it (RECORDING_SEGMENT_TARGET_MS=2000, RECORDING_PROGRESS_EVERY_FRAMES=20: one progress per segment). Server CPU: cores the server used over the window. Held: ack p99 ≤ ${ACK_P99_MS} ms and durable/offered ≥ ${MIN_DURABLE}. Capacity is searched by doubling from 50, then halving the interval.`,
      '',
      table(rows),
      '',
      memoryLine([...measured.values()]),
      '',
      at ? `Cost: ${((cpuPerFrame * 36_000) / 1000).toFixed(1)} vCPU-seconds of server CPU per recording-hour (CPU/frame at ${capacity} recordings × 36,000 frames); ${workers > 1 ? `an instance of ${workers} vCPU` : 'a core'} provisioned for ${capacity} recordings costs ${((3600 * workers) / capacity).toFixed(1)} vCPU-seconds per recording-hour.` : '',
      '',
      processTable(at, over),
    ].join('\n');
    console.log(`\n${body}`);
    writeSection(workers > 1 ? `Live (${workers} workers)` : 'Live', body, path.join(ROOT, 'BENCHMARKS.md'));
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

function row(live: Measured, bare: Measured, held: boolean): Row {
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
function memoryLine(points: Measured[]): string {
  const sorted = [...points].sort((a, b) => a.n - b.n);
  const [lo, hi] = [sorted[0], sorted.at(-1)];
  if (!lo || !hi || lo === hi) return '';
  const slope = (hi.rssPerRecording * hi.n - lo.rssPerRecording * lo.n) / (hi.n - lo.n);
  return `Memory: ${(slope / 1024).toFixed(0)} KiB of RSS per additional recording (the growth of the server's RSS from ${lo.n} to ${hi.n} recordings).`;
}

/** The cores each process group used at capacity and at the first load not held: which one was the limit. */
function processTable(at: Measured | undefined, over: Measured | undefined): string {
  const points = [at, over].filter((m): m is Measured => !!m);
  if (!points.length) return '';
  // Helpers that used no measurable CPU (a shell, esbuild's service) are left out.
  const groups = [...new Set(points.flatMap((m) => [...m.groups.keys()]))].filter((g) => points.some((m) => (m.groups.get(g) ?? 0) / m.wallMs >= 0.005)).sort();
  const cols = points.map((m) => `cores at ${m.n} recordings${m === at ? ' (capacity)' : ' (not held)'}`);
  const rows: Row[] = groups.map((g) => Object.fromEntries([['process', g], ...points.map((m, i) => [cols[i], ((m.groups.get(g) ?? 0) / m.wallMs).toFixed(2)])]));
  return `CPU of every process over the window (a core is 1.00; the server has one core of its own when pinned):\n\n${table(rows)}`;
}

/** n users, each with a recording meeting and a token. */
async function makeRecordings(db: Database, n: number): Promise<Plan['recordings']> {
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const name = `bench-${n}-${i}-${randomUUID().slice(0, 4)}`;
      const user = await findOrCreateUser(db, { identityId: `dev|${name}`, email: `${name}@example.test`, username: name });
      const meeting = await createMeeting(db, user.id, { title: name, source_type: 'recording' });
      return { token: await mintDevToken(SECRETS.IDENTITY_SECRET_KEY, name), meetingId: meeting.id };
    }),
  );
}

async function measure(
  n: number,
  mode: 'live' | 'bare',
  recordings: Plan['recordings'],
  seconds: number,
  env: Record<string, string | undefined>,
  dir: string,
  o: { pinned: boolean; named: Record<string, number | undefined>; node: string; change?: Change },
): Promise<Measured> {
  // As the container runs it: with the telemetry preload (Dockerfile CMD), unless a change leaves it out.
  const preload = o.change?.preload === false ? [] : ['--import', TELEMETRY_PRELOAD];
  // BENCH_PROFILE=<dir>: a CPU profile of the live server process.
  const nodeFlags = mode === 'live' ? [...preload, ...(process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [])] : [];
  const core = o.pinned ? SERVER_CORE : undefined;
  let port: number;
  let server: Child;
  if (mode === 'live') {
    // The deployable itself (the bundle Cloud Run runs), on a port of its own.
    port = await freePort();
    server = child([], { ...env, ...o.change?.env, PORT: String(port), LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'error' }, { nodeFlags, core, script: LIVE_BUNDLE, node: o.node });
    await waitHealthy(port, server);
  } else {
    server = child(['bare'], env, { core, node: o.node });
    port = (await server.line('ready')).ready as number;
  }
  await sleep(1000);
  const pid = server.proc.pid!;
  const baseRss = treeRssBytes(pid);
  const planFile = path.join(dir, `plan-${mode}-${n}.json`);
  writeFileSync(planFile, JSON.stringify({ wsUrl: `ws://127.0.0.1:${port}/ws`, mode, seconds, recordings } satisfies Plan));
  const load = child(['load', planFile], env);
  await load.line('sending');
  const named = { ...o.named, server: pid, 'load generator': load.proc.pid };
  const from = { cpu: treeCpuMs(pid), groups: cpuByGroup(named), at: performance.now() };
  let peakRss = baseRss;
  const rssTimer = setInterval(() => (peakRss = Math.max(peakRss, treeRssBytes(pid))), 1000);
  const result = (await load.line('result')).result as LoadResult;
  const to = { cpu: treeCpuMs(pid), groups: cpuByGroup(named), at: performance.now() };
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
    rssPerRecording: (peakRss - baseRss) / n,
  };
}
