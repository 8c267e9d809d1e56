// The fault-test cluster: one embedded Postgres (PGlite over the wire protocol), two live
// service instances as CHILD PROCESSES (run-services/live/server.ts, killable with real
// signals and restartable on the same port), the REST API and the fake ML service in this
// process, a private Pub/Sub emulator (restartable without disturbing other test files) and a
// private GCS emulator (its fault injection then only hits this cluster).
// No vitest import: the long run (run.ts) uses it outside the test runner.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve, type ServerType } from '@hono/node-server';
import { mintDevToken } from '@mi/lib/adapters/auth';
import { loadConfig, type Config } from '@mi/lib/config';
import { createDatabase } from '@mi/lib/db/pool';
import { createLogger } from '@mi/lib/telemetry/log';
import { createRuntime, type Runtime } from '@mi/lib/adapters/runtime';
import { createApp } from '../../functions/api/app';
import { freePort, startFirestoreEmulator, startPubsubEmulator, type RunningEmulator } from '../../emulators/gcloud';
import { startGcsEmulator, type GcsEmulator } from '../../emulators/gcs/server';
import { loadOrCreateSignerKey } from '../../emulators/gcs/signer-key';
import { startFakeMl, type FakeMl } from '../../emulators/ml/server';
import type { NativeCluster } from '@mi/lib/dev/native-postgres';
import { createTestDatabase, startTestEngine } from '../support/database';
import { sleep } from '../support/poll';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SERVER_ENTRY = 'run-services/live/server.ts';
const HEALTHY_TIMEOUT_MS = 60_000;
const TAIL_CHARS = 8_000;

const FAULT_SECRETS = {
  IDENTITY_SECRET_KEY: 'fault-identity-secret-key-0123456789',
  SERVICE_AUTH_TOKEN: 'fault-service-token-0123456789abcdef',
};

/** Recording settings that make a take write often and report progress often. */
const FAULT_RECORDING_ENV: Record<string, string> = {
  RECORDING_SEGMENT_TARGET_MS: '1000',
  RECORDING_PROGRESS_EVERY_FRAMES: '20',
  RECORDING_PROGRESS_INTERVAL_SECONDS: '1',
  RECORDING_STOP_SETTLE_MS: '200',
  RECORDING_ML_DRAIN_TIMEOUT_SECONDS: '2',
  // Short, so that a client away a little longer sees its take stopped and uploads gaps.
  RECORDING_DISCONNECT_GRACE_SECONDS: '3',
  RECORDING_GAP_UPLOAD_DEADLINE_SECONDS: '600',
  ML_DRAIN_TIMEOUT_SECONDS: '0.5',
  // The instances deliver webhooks: retries within the run (about 30 s in all before giving up).
  WEBHOOK_RETRY_SCHEDULE_SECONDS: '0.5,1,2,4,8,8,8',
  WEBHOOK_POLL_MS: '200',
};

export interface ClusterOptions {
  /** FIRESTORE_EMULATOR_HOST to share (e.g. the test run's); otherwise a private one is started. */
  firestoreHost?: string;
  /** Extra environment for every part (limits). */
  env?: Record<string, string>;
  /** Where child-process diagnostics go. */
  log?: (line: string) => void;
}

/** One live service instance: a child process on a fixed port. */
export class LiveChild {
  private child: ChildProcess | null = null;
  private exited: Promise<number | string | null> = Promise.resolve(null);
  /** The end of the process's output (diagnostics). */
  tail = '';

  constructor(
    readonly name: string,
    readonly port: number,
    private readonly env: Record<string, string>,
    private readonly log: (line: string) => void,
  ) {}

  get wsUrl(): string {
    return `ws://127.0.0.1:${this.port}/ws`;
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  /**
   * Spawns the process and waits until /healthz answers 200. One that exits while starting (its
   * Pub/Sub emulator may still be booting) is spawned again until the deadline.
   */
  async start(): Promise<void> {
    if (this.running) return;
    const deadline = Date.now() + HEALTHY_TIMEOUT_MS;
    for (;;) {
      this.spawn();
      while (this.running && Date.now() < deadline) {
        if (await this.healthy()) return;
        await sleep(100);
      }
      if (Date.now() >= deadline) {
        await this.kill('SIGKILL');
        throw new Error(`${this.name} did not become healthy within ${HEALTHY_TIMEOUT_MS} ms:\n${this.tail}`);
      }
      this.log(`${this.name} exited while starting; starting it again`);
      await sleep(500);
    }
  }

  private spawn(): void {
    // `node --import tsx`: one process, so a signal reaches the service itself (the tsx CLI would relay it).
    const child = spawn(process.execPath, ['--import', 'tsx', SERVER_ENTRY], {
      cwd: ROOT,
      env: { ...process.env, ...this.env, PORT: String(this.port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    const keep = (chunk: Buffer) => (this.tail = (this.tail + chunk.toString()).slice(-TAIL_CHARS));
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    const watchdog = killOnParentDeath(child);
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        watchdog?.kill();
        resolve(signal ?? code);
      }),
    );
  }

  private async healthy(): Promise<boolean> {
    try {
      const res = await fetch(`http://127.0.0.1:${this.port}/healthz`, { signal: AbortSignal.timeout(1_000) });
      return res.status === 200;
    } catch {
      return false;
    }
  }

  /** Sends the signal and waits for the exit; resolves with the exit code or signal. */
  async kill(signal: 'SIGKILL' | 'SIGTERM'): Promise<number | string | null> {
    const child = this.child;
    if (!child || !this.running) return null;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000); // a SIGTERM that never ends
    const how = await this.exited;
    clearTimeout(timer);
    if (signal === 'SIGTERM' && how !== 0) this.log(`${this.name}: SIGTERM exit ${how}\n${this.tail.slice(-2000)}`);
    return how;
  }
}

export interface Cluster {
  config: Config;
  /** The REST API's runtime (this process): the checker and the sweep use it. */
  rt: Runtime;
  apiUrl: string;
  instances: LiveChild[];
  ml: FakeMl;
  pubsub: RunningEmulator;
  /** A user token for `name` (the user row appears on first use). */
  token(name: string): Promise<string>;
  /** Adds an injected GCS fault for this cluster's bucket. */
  /** Faults this cluster's bucket's requests; with `objectPrefix`, only reads of the objects under it. */
  gcsFault(spec: {
    mode: 'error503' | 'stall';
    count: number;
    stall_ms?: number;
    objectPrefix?: string;
  }): Promise<void>;
  clearGcsFaults(): Promise<void>;
  /** The database engine, as tests print it. */
  databaseEngine: string;
  /** Restarts the database (native engine only; null on PGlite, which cannot restart under its clients). */
  restartDatabase: ((downMs: number) => Promise<void>) | null;
  close(): Promise<void>;
}

export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const log = opts.log ?? (() => {});
  const cleanup: (() => Promise<unknown>)[] = [];
  try {
    // The signing identity of audio links, trusted by the GCS emulator (as emulators/stack.ts does).
    const keyDir = mkdtempSync(join(tmpdir(), 'fault-signer-'));
    cleanup.push(async () => rmSync(keyDir, { recursive: true, force: true }));
    const signerKeyFile = join(keyDir, 'signer.json');
    const signer = loadOrCreateSignerKey(signerKeyFile);
    // A database engine of its own (native when installed): db-restart faults restart it.
    const [engine, firestore, gcs, pubsubPort] = await Promise.all([
      startTestEngine(),
      opts.firestoreHost
        ? Promise.resolve<RunningEmulator>({ host: opts.firestoreHost, stop: async () => {} })
        : startFirestoreEmulator(),
      startGcsEmulator({ trustedKeys: [signer] }),
      freePort(),
    ]);
    cleanup.push(
      () => engine.stop(),
      () => firestore.stop(),
      () => gcs.stop(),
    );
    const database = await createTestDatabase(engine.engine);
    cleanup.push(() => database.close());
    const pg = { url: database.url, engineLabel: engine.engine.label, cluster: engine.cluster };
    // The Pub/Sub emulator (java) boots while the instances load their code.
    const pubsub = startPubsubEmulator({ port: pubsubPort });
    pubsub.catch(() => undefined); // awaited in assemble; this only keeps an early failure from going unhandled
    cleanup.push(() => pubsub.then((p) => p.stop()));
    return await assemble(
      { pg, pubsub, pubsubHost: `127.0.0.1:${pubsubPort}`, firestore, gcs, signerKeyFile },
      opts,
      log,
      cleanup,
    );
  } catch (err) {
    for (const c of cleanup.reverse()) await c().catch(() => undefined);
    throw err;
  }
}

async function assemble(
  parts: {
    pg: { url: string; engineLabel: string; cluster: NativeCluster | null };
    pubsub: Promise<RunningEmulator>;
    pubsubHost: string;
    firestore: RunningEmulator;
    gcs: GcsEmulator;
    signerKeyFile: string;
  },
  opts: ClusterOptions,
  log: (line: string) => void,
  cleanup: (() => Promise<unknown>)[],
): Promise<Cluster> {
  const tag = randomUUID().slice(0, 8);
  const [apiPort, mlPort, portA, portB] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const env: Record<string, string> = {
    APP_ENV: 'test',
    LOG_LEVEL: 'warn',
    OTEL_ENABLED: 'false',
    ...FAULT_SECRETS,
    DATABASE_URL: parts.pg.url,
    PUBSUB_EMULATOR_HOST: parts.pubsubHost,
    FIRESTORE_EMULATOR_HOST: parts.firestore.host,
    STORAGE_EMULATOR_HOST: parts.gcs.url,
    STORAGE_SIGNER_KEY_FILE: parts.signerKeyFile,
    STORAGE_BUCKET: `fault-${tag}`,
    PUBSUB_TOPIC_EVENTS: `events-${tag}`,
    PUBSUB_TOPIC_RECORDING_FINALIZED: `finalized-${tag}`,
    ML_SERVICE_URL: `http://127.0.0.1:${mlPort}`,
    // One process per instance, so a signal hits the instance itself (workers: test/live/workers.test.ts).
    LIVE_WORKERS: '1',
    ...FAULT_RECORDING_ENV,
    ...opts.env,
  };
  // This process's parts (API, fake ML) log errors only: their warnings under injected faults are expected.
  const config = loadConfig({ ...env, LOG_LEVEL: 'error', CORE_PORT: String(apiPort) });
  const instances = [new LiveChild('live-a', portA, env, log), new LiveChild('live-b', portB, env, log)];
  cleanup.push(() => Promise.allSettled(instances.map((i) => i.kill('SIGKILL'))));
  const db = createDatabase(parts.pg.url);
  const rt = createRuntime(config, db, { log: createLogger({ level: 'error', name: 'fault-api' }) });
  cleanup.push(
    () => db.close(),
    () => rt.close(),
  );
  await rt.store.ensureBucket(); // before the instances, which only create it when missing
  const [pubsub] = await Promise.all([parts.pubsub, ...instances.map((i) => i.start())]);
  await rt.bus.ensureTopic(config.PUBSUB_TOPIC_EVENTS);

  const app = createApp(rt);
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: apiPort, hostname: '127.0.0.1' }, () => resolve(s));
  });
  cleanup.push(
    () => new Promise((r) => (server.close(r), (server as { closeAllConnections?(): void }).closeAllConnections?.())),
  );
  const apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const ml = await startFakeMl({ port: mlPort, coreUrl: apiUrl, serviceToken: config.SERVICE_AUTH_TOKEN, config });
  cleanup.push(() => ml.stop());

  const faultsUrl = `${parts.gcs.url}/_emulator/faults`;
  return {
    config,
    rt,
    apiUrl,
    instances,
    ml,
    pubsub,
    token: (name) => mintDevToken(FAULT_SECRETS.IDENTITY_SECRET_KEY, name),
    async gcsFault(spec) {
      const res = await fetch(faultsUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          mode: spec.mode,
          count: spec.count,
          stall_ms: spec.stall_ms,
          match: `${config.STORAGE_BUCKET}${spec.objectPrefix ? `/o/${spec.objectPrefix}` : ''}`,
        }),
      });
      if (!res.ok) throw new Error(`fault injection answered ${res.status}: ${await res.text()}`);
    },
    async clearGcsFaults() {
      await fetch(faultsUrl, { method: 'DELETE' });
    },
    databaseEngine: parts.pg.engineLabel,
    restartDatabase: parts.pg.cluster ? (downMs) => parts.pg.cluster!.restart({ downMs }) : null,
    async close() {
      for (const c of cleanup.reverse()) await c().catch((err) => log(`cleanup: ${(err as Error).message}`));
    },
  };
}

/**
 * A killed test runner runs no exit handler: a tiny shell holds a pipe from this process and
 * kills the child when the pipe closes, so no instance outlives the run.
 */
export function killOnParentDeath(child: ChildProcess): ChildProcess | null {
  if (child.pid === undefined) return null;
  const watchdog = spawn('sh', ['-c', `read _; kill -KILL ${child.pid} 2>/dev/null`], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  watchdog.unref();
  (watchdog.stdin as unknown as { unref(): void }).unref();
  return watchdog;
}
