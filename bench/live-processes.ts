// The processes of the live benchmarks: the stack they run on (database, emulators, ML sink),
// the live service's deployable bundle and the roles of bench/live-roles.ts as children, pinning.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { sleep } from '@mi/lib/async';
import { mintDevToken } from '@mi/lib/adapters/auth';
import { createObjectStore } from '@mi/lib/adapters/storage';
import { createDatabase, type Database } from '@mi/lib/db/pool';
import { createMeeting } from '@mi/lib/repositories/meetings';
import { findOrCreateUser } from '@mi/lib/repositories/users';
import { createTestDatabase, runtimeUrl, startTestEngine, type TestEngine } from '../test/support/database';
import { buildAll } from '../scripts/build';
import { freePort, startFirestoreEmulator, startPubsubEmulator } from '../emulators/gcloud';
import { SEGMENT_MS } from './live-roles';
import { postmasterPid } from './server-cpu';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ROLES = path.join(ROOT, 'bench/live-roles.ts');
export const SECRETS = {
  IDENTITY_SECRET_KEY: 'bench-identity-secret-0123456789',
  SERVICE_AUTH_TOKEN: 'bench-service-token-0123456789ab',
};
const BENCH_RECORDING_ENV = {
  RECORDING_SEGMENT_TARGET_MS: String(SEGMENT_MS),
  RECORDING_PROGRESS_EVERY_FRAMES: '20',
  LIVE_MAX_CONNECTIONS_PER_USER: '20',
};
export const SERVER_CORE = 1;
/** This tree's live bundle. */
export const BUNDLE = path.join(ROOT, 'run-services/live/dist/server.js');
// BENCH_LIVE_BUNDLE: another release's live bundle (bench:upgrade: the one serving before the rollout).
export const LIVE_BUNDLE = process.env.BENCH_LIVE_BUNDLE ? path.resolve(process.env.BENCH_LIVE_BUNDLE) : BUNDLE;
export const TELEMETRY_PRELOAD = path.join(ROOT, 'run-services/live/dist/telemetry-register.js');

export interface Stack {
  /** The live service's environment (add PORT, LIVE_WORKERS). */
  env: Record<string, string | undefined>;
  db: Database;
  engineLabel: string;
  /** Processes measured by name besides the servers. */
  named: Record<string, number | undefined>;
  stop(): Promise<void>;
}

/**
 * Builds the bundles and starts what the live service runs on, each in a process of its own; on
 * the given database (bench:upgrade's) or a new one of the test engine's.
 */
export async function startStack(given?: { url: string; engine: TestEngine }): Promise<Stack> {
  const stops: (() => Promise<unknown>)[] = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch(() => undefined);
  };
  try {
    await buildAll();
    const [pubsub, firestore] = await Promise.all([startPubsubEmulator(), startFirestoreEmulator()]);
    stops.push(pubsub.stop, firestore.stop);
    const gcsPort = await freePort();
    const gcs = spawn(process.execPath, ['--import', 'tsx', 'emulators/gcs/main.ts', '--port', String(gcsPort)], {
      cwd: ROOT,
      stdio: 'ignore',
    });
    stops.push(async () => gcs.kill('SIGTERM'));
    // The test engine: native PostgreSQL when installed, else PGlite (TEST_DATABASE chooses).
    let engine: TestEngine;
    let url: string;
    if (given) ({ engine, url } = given);
    else {
      const started = await startTestEngine();
      stops.push(started.stop);
      engine = started.engine;
      url = (await createTestDatabase(engine)).url;
    }
    const ml = child(['ml'], process.env);
    stops.push(() => stopChild(ml));
    const mlUrl = `http://127.0.0.1:${(await ml.line('ready')).ready}`;
    const env: Record<string, string | undefined> = {
      ...process.env,
      APP_ENV: 'test',
      LOG_LEVEL: 'error',
      ...SECRETS,
      ...BENCH_RECORDING_ENV,
      // As deployed: the live service connects as its own login (mi_live), bound by the row
      // policies; a database the caller brings (bench:upgrade's released schema) has no roles yet.
      DATABASE_URL: given ? url : runtimeUrl(engine, url, 'live'),
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
    // The bench's own pool (users, meetings, tokens for hundreds of recordings at once): on a
    // loaded machine a connection can take longer than the production default's 5 s to come.
    const db = createDatabase(url, { connectTimeoutMs: 60_000 });
    stops.push(() => db.close());
    const named = {
      'GCS emulator': gcs.pid,
      'ML sink': ml.proc.pid,
      PostgreSQL: (await postmasterPid(engine, db)) ?? undefined,
    };
    return { env, db, engineLabel: engine.label, named, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** n users, each with a recording meeting and a token. */
export async function makeRecordings(db: Database, n: number): Promise<{ token: string; meetingId: string }[]> {
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const name = `bench-${n}-${i}-${randomUUID().slice(0, 4)}`;
      const user = await findOrCreateUser(db, {
        identityId: `dev|${name}`,
        email: `${name}@example.test`,
        username: name,
      });
      const meeting = await createMeeting(db, user.id, { title: name, source_type: 'recording' });
      return { token: await mintDevToken(SECRETS.IDENTITY_SECRET_KEY, name), meetingId: meeting.id };
    }),
  );
}

/** The live service's deployable on a port of its own, as the container runs it (with its telemetry preload). */
export async function startLive(
  env: Record<string, string | undefined>,
  o: { nodeFlags?: string[]; core?: number; node?: string; preload?: boolean; script?: string } = {},
): Promise<{ server: Child; port: number }> {
  const port = await freePort();
  const nodeFlags = [...(o.preload === false ? [] : ['--import', TELEMETRY_PRELOAD]), ...(o.nodeFlags ?? [])];
  const server = child(
    [],
    { ...env, PORT: String(port), LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'error' },
    { nodeFlags, core: o.core, script: o.script ?? LIVE_BUNDLE, node: o.node },
  );
  await waitHealthy(port, server);
  return { server, port };
}

export interface Child {
  proc: ChildProcess;
  /** Resolves with the first line that has this key. */
  line(key: 'ready' | 'sending' | 'result'): Promise<Record<string, unknown>>;
  /** The bare server's frame counts, a second apart. */
  counts: number[];
}

/** A role of this file, or with `script` that file (the live service's bundle). */
export function child(
  args: string[],
  env: Record<string, string | undefined>,
  o: { nodeFlags?: string[]; core?: number; script?: string; node?: string } = {},
): Child {
  const node = o.node ?? process.execPath;
  const argv = [...(o.nodeFlags ?? []), ...(o.script ? [o.script] : ['--import', 'tsx', ROLES]), ...args];
  const proc =
    o.core === undefined
      ? spawn(node, argv, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] })
      : spawn('taskset', ['-c', String(o.core), node, ...argv], {
          cwd: ROOT,
          env,
          stdio: ['ignore', 'pipe', 'inherit'],
        });
  const counts: number[] = [];
  const waiters = new Map<string, (v: Record<string, unknown>) => void>();
  const seen = new Map<string, Record<string, unknown>>();
  const died = new Promise<never>((_, reject) =>
    proc.once('close', (code) => reject(new Error(`bench ${args[0]} exited with ${code}`))),
  );
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
  const line: Child['line'] = (key) =>
    seen.has(key)
      ? Promise.resolve(seen.get(key)!)
      : Promise.race([new Promise<Record<string, unknown>>((r) => waiters.set(key, r)), died]);
  return { proc, counts, line };
}

/** Until the live service answers /healthz (it has started). */
export async function waitHealthy(port: number, server: Child): Promise<void> {
  // Two minutes: eight instances starting at once on a loaded machine are slow.
  for (let i = 0; i < 1200; i++) {
    if (server.proc.exitCode !== null) throw new Error(`the live service exited with ${server.proc.exitCode}`);
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await sleep(100);
  }
  throw new Error('the live service did not start');
}

export async function stopChild(c: Child): Promise<void> {
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
export function serverNode(): string {
  if (process.env.BENCH_NODE) return process.env.BENCH_NODE;
  const found = spawnSync('npm', ['exec', '--yes', '--package=node@24', '--', 'node', '-p', 'process.execPath'], {
    encoding: 'utf8',
  });
  return found.status === 0 && found.stdout.trim() ? found.stdout.trim() : process.execPath;
}

/** Pins this process (and so every process it starts) to every core but the server's. */
export function pinRest(workers: number): boolean {
  const cores = availableParallelism();
  if (workers > 1 || cores < 2 || spawnSync('taskset', ['-V']).status !== 0) return false;
  const others = Array.from({ length: cores }, (_, i) => i).filter((c) => c !== SERVER_CORE);
  return spawnSync('taskset', ['-a', '-cp', others.join(','), String(process.pid)]).status === 0;
}
