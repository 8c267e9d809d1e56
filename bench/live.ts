// `npm run bench:live`: N concurrent recordings at 10 frames/s (16 kHz PCM, 3,200 bytes a frame)
// against one live instance, and the same frame load against a bare `ws` server that only counts
// frames. Reports frames/s (durable for the live service, received for the bare one) and their
// ratio, frame→durable-ack latency (the first AudioStoredProgressEvent covering the frame),
// event-loop lag and RSS per recording of the server process. The server, the load and the rest
// (database, emulators, an ML sink) run in separate processes so the server's figures are its own.
// One file, five roles: (none) orchestrates, `server` / `bare` / `load` / `ml` are its children.
// BENCH_RECORDINGS (comma list, default 50,200,500), BENCH_SECONDS (default 20), BENCH_LOG_LEVEL
// (the server's, default error), BENCH_PROFILE=<dir> (a CPU profile of the server), BENCH_TRACE=1
// (per second: takes, frames waiting for storage, event-loop lag p99 of the server).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import WebSocket, { WebSocketServer } from 'ws';
import { mintDevToken } from '@mi/lib/auth';
import { loadConfig } from '@mi/lib/config';
import { createTestDatabase, startTestEngine } from '../test/support/database';
import { createDatabase, type Database } from '@mi/lib/db/pool';
import { createMeeting } from '@mi/lib/domain/meetings';
import { findOrCreateUser } from '@mi/lib/domain/users';
import { createLogger } from '@mi/lib/log';
import { createRuntime } from '@mi/lib/runtime';
import { createObjectStore } from '@mi/lib/storage';
import { createLiveService } from '@mi/live/service';
import { freePort, startFirestoreEmulator, startPubsubEmulator } from '../emulators/gcloud';
import { ms, percentile, table, writeSection, type Row } from './report';

const SELF = fileURLToPath(import.meta.url);
const ROOT = path.resolve(path.dirname(SELF), '..');
const FRAME_BYTES = 3200;
const FRAME_MS = 100;
const SECRETS = { IDENTITY_SECRET_KEY: 'bench-identity-secret-0123456789', SERVICE_AUTH_TOKEN: 'bench-service-token-0123456789ab' };
/** Progress per stored segment (2 s): what frame→durable-ack can be measured against. */
const WARM_UP_RECORDINGS = 10;
const BENCH_RECORDING_ENV = { RECORDING_SEGMENT_TARGET_MS: '2000', RECORDING_PROGRESS_EVERY_FRAMES: '20', LIVE_MAX_CONNECTIONS_PER_USER: '20' };

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
  durablePerSecond: number;
}

interface Stats {
  rss: number;
  lagP99: number;
  frames?: number;
  takes?: number;
  /** Frames received by the live server and not yet durable. */
  waiting?: number;
}

const role = process.argv[2];
if (role === 'server') await serverRole();
else if (role === 'bare') await bareRole();
else if (role === 'ml') await mlRole();
else if (role === 'load') await loadRole(JSON.parse(readFileSync(process.argv[3], 'utf8')) as Plan);
else await orchestrate();

// --- children -----------------------------------------------------------------------------------

/** Prints one JSON line of stats a second: RSS and the event loop's p99 delay over that second. */
function reportStats(extra: () => Record<string, number> = () => ({})): void {
  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  setInterval(() => {
    console.log(JSON.stringify({ stats: { rss: process.memoryUsage().rss, lagP99: lag.percentile(99) / 1e6, ...extra() } }));
    lag.reset();
  }, 1000);
}

async function serverRole(): Promise<void> {
  const config = loadConfig(process.env);
  const db = createDatabase(config.DATABASE_URL!, { max: 10 });
  const rt = createRuntime(config, db, { log: createLogger({ level: process.env.BENCH_LOG_LEVEL ?? 'error', name: 'bench-live' }) });
  const live = createLiveService(rt);
  await live.start();
  const server = createServer((_req, res) => res.writeHead(404).end());
  server.on('upgrade', (req, socket, head) => live.handleUpgrade(req, socket, head));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  reportStats(() => {
    let waiting = 0;
    for (const r of live.recorders.values()) waiting += r.pendingFrames;
    return { takes: live.recorders.size, waiting };
  });
  console.log(JSON.stringify({ ready: (server.address() as AddressInfo).port }));
  // Profiling: exit at once, so that the profile is written before the orchestrator's kill.
  process.once('SIGTERM', () => (process.env.BENCH_PROFILE ? process.exit(0) : void live.shutdown().finally(() => process.exit(0))));
}

async function bareRole(): Promise<void> {
  let frames = 0;
  const server = createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ server, perMessageDeflate: false });
  wss.on('connection', (ws) => ws.on('message', (_d, isBinary) => void (isBinary && frames++)));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  reportStats(() => ({ frames }));
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
        await started;
      }
      return { ws, sentAt, offset: (i * FRAME_MS) / plan.recordings.length };
    }),
  );

  // Every recording sends a frame every 100 ms, spread evenly over the 100 ms.
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
        await sleep(t0 + s.offset + (seq + 1) * FRAME_MS - Date.now());
      }
    }),
  );
  if (plan.mode === 'live') {
    const deadline = Date.now() + 15_000;
    while (acked < sent && Date.now() < deadline) await sleep(100);
  }
  const result: LoadResult = { problems, sent, acked, ackMs, durablePerSecond: acked / plan.seconds };
  for (const s of sessions) s.ws.terminate();
  // Exit once the (large) line is out: a pipe write is asynchronous.
  process.stdout.write(`${JSON.stringify({ result })}\n`, () => process.exit(0));
}

// --- orchestration ------------------------------------------------------------------------------

interface Child {
  proc: ChildProcess;
  ready: Promise<Record<string, unknown>>;
  stats: Stats[];
  result: Promise<LoadResult>;
}

function child(args: string[], env: Record<string, string | undefined>, nodeFlags: string[] = []): Child {
  const proc = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', SELF, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
  const stats: Stats[] = [];
  let ready!: (v: Record<string, unknown>) => void;
  let result!: (v: LoadResult) => void;
  const died = new Promise<never>((_, reject) => proc.once('close', (code) => reject(new Error(`bench ${args[0]} exited with ${code}`))));
  const c: Child = {
    proc,
    stats,
    ready: Promise.race([new Promise<Record<string, unknown>>((r) => (ready = r)), died]),
    result: Promise.race([new Promise<LoadResult>((r) => (result = r)), died]),
  };
  // Whichever a caller does not await must not become an unhandled rejection.
  c.ready.catch(() => undefined);
  c.result.catch(() => undefined);
  createInterface({ input: proc.stdout! }).on('line', (line) => {
    let m: { ready?: number; stats?: Stats; result?: LoadResult };
    try {
      m = JSON.parse(line);
    } catch {
      return;
    }
    if (m.ready) ready(m);
    if (m.stats) stats.push(m.stats);
    if (m.result) result(m.result);
  });
  return c;
}

async function stopChild(c: Child): Promise<void> {
  if (c.proc.exitCode !== null) return;
  const exited = new Promise((r) => c.proc.once('exit', r));
  c.proc.kill('SIGTERM');
  await Promise.race([exited, sleep(10_000)]);
  if (c.proc.exitCode === null) c.proc.kill('SIGKILL');
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

async function orchestrate(): Promise<void> {
  const counts = (process.env.BENCH_RECORDINGS ?? '50,200,500').split(',').map(Number);
  const seconds = Number(process.env.BENCH_SECONDS ?? 20);
  const dir = mkdtempSync(path.join(tmpdir(), 'mi-bench-live-'));
  const stops: (() => Promise<unknown>)[] = [];
  try {
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
    const mlUrl = `http://127.0.0.1:${(await ml.ready).ready}`;

    const env: Record<string, string | undefined> = {
      ...process.env,
      APP_ENV: 'test',
      LOG_LEVEL: 'error',
      ...SECRETS,
      ...BENCH_RECORDING_ENV,
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

    const rows: Row[] = [];
    // A first, unreported round warms up the emulators, the JIT and the caches.
    await measure(WARM_UP_RECORDINGS, 'live', await makeRecordings(db, WARM_UP_RECORDINGS), 5, env, dir);
    for (const n of counts) {
      const recordings = await makeRecordings(db, n);
      const live = await measure(n, 'live', recordings, seconds, env, dir);
      const { rows: storedRows } = await db.query<{ frames: number }>(
        'bench.stored',
        'SELECT COALESCE(SUM(end_sequence - start_sequence + 1), 0) AS frames FROM segment_manifest WHERE meeting_id = ANY($1)',
        [recordings.map((r) => r.meetingId)],
      );
      const bare = await measure(n, 'bare', recordings, seconds, env, dir);
      if (Object.keys(live.result.problems).length) console.log(`${n} recordings: ${JSON.stringify(live.result.problems)}`);
      const offered = n * (1000 / FRAME_MS);
      const bareFps = bare.framesPerSecond;
      rows.push({
        recordings: n,
        'offered frames/s': offered,
        'durable frames/s': Math.round(live.result.durablePerSecond),
        'bare ws frames/s': Math.round(bareFps),
        ratio: (live.result.durablePerSecond / bareFps).toFixed(2),
        'ack p50': ms(percentile(live.result.ackMs, 50)),
        'ack p99': ms(percentile(live.result.ackMs, 99)),
        'acked / stored / sent': `${live.result.acked} / ${storedRows[0].frames} / ${live.result.sent}`,
        'loop lag p99': ms(live.lagP99),
        'bare loop lag p99': ms(bare.lagP99),
        'RSS / recording': `${((live.peakRss - live.baseRss) / n / 1024).toFixed(0)} KiB`,
      });
      console.log(table(rows.slice(-1)));
    }
    const body = [
      `${seconds} s of 10 frames/s per recording (3,200-byte PCM frames) against one live instance (\`createLiveService\` in its own process), then the same load against a bare \`ws\` server that only counts frames.`,
      `Frames/s: frames made durable (covered by an AudioStoredProgressEvent) or, for the bare server, received, over the ${seconds} s; ratio: durable / bare; ack: frame sent → first progress event covering it (RECORDING_SEGMENT_TARGET_MS=2000, RECORDING_PROGRESS_EVERY_FRAMES=20: one progress per segment). ${engine.engine.label} as the database, the gcloud Pub/Sub and Firestore emulators, the in-repo GCS emulator (in memory) and an ML sink run in other processes on the same machine.`,
      '',
      table(rows),
    ].join('\n');
    console.log(`\n${table(rows)}`);
    writeSection('Live', body, path.join(ROOT, 'BENCHMARKS.md'));
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
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

async function measure(n: number, mode: 'live' | 'bare', recordings: Plan['recordings'], seconds: number, env: Record<string, string | undefined>, dir: string) {
  // BENCH_PROFILE=<dir>: a CPU profile of the live server process.
  const profile = mode === 'live' && process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  const server = child([mode === 'live' ? 'server' : 'bare'], env, profile);
  const { ready } = (await server.ready) as { ready: number };
  await sleep(1500);
  const baseRss = Math.max(...server.stats.map((s) => s.rss));
  const planFile = path.join(dir, `plan-${mode}-${n}.json`);
  writeFileSync(planFile, JSON.stringify({ wsUrl: `ws://127.0.0.1:${ready}/ws`, mode, seconds, recordings } satisfies Plan));
  const from = server.stats.length;
  const load = child(['load', planFile], env);
  const result = await load.result;
  await sleep(1200); // one more stats line, after the last frame
  const during = server.stats.slice(from);
  if (process.env.BENCH_TRACE) console.error(JSON.stringify(during.map((s) => [s.takes, s.waiting, Math.round(s.lagP99)])));
  const frames = during.map((s) => s.frames ?? 0);
  await stopChild(load);
  await stopChild(server);
  return {
    result,
    baseRss,
    peakRss: Math.max(...during.map((s) => s.rss)),
    lagP99: percentile(during.map((s) => s.lagP99), 99),
    framesPerSecond: Math.max(0, ...frames) / seconds,
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, Math.max(0, ms)));
}
