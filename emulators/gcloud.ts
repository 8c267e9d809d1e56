// Runs the gcloud Pub/Sub and Firestore emulators as child processes. gcloud is a Python
// wrapper that spawns java (through a shell script for Firestore), so each emulator is started
// in its own process group and stopped by signalling the whole group: nothing outlives stop().
import { sleep } from '@mi/lib/async';
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { delimiter, join } from 'node:path';
import { freePort } from '@mi/lib/dev/free-port';

export { freePort };

export interface RunningEmulator {
  /** 127.0.0.1:PORT, the value for PUBSUB_EMULATOR_HOST / FIRESTORE_EMULATOR_HOST. */
  host: string;
  stop(): Promise<void>;
  /** Stops and starts again on the same port (reliability tests). */
  restart?(): Promise<void>;
}

const READY_TIMEOUT_MS = 90_000;
const STOP_GRACE_MS = 5_000;
const TAIL_CHARS = 4_000;

export async function startPubsubEmulator(opts: { port?: number; dataDir?: string } = {}): Promise<RunningEmulator> {
  const port = opts.port || (await freePort());
  if (opts.dataDir) mkdirSync(opts.dataDir, { recursive: true });
  const args = ['beta', 'emulators', 'pubsub', 'start', `--host-port=127.0.0.1:${port}`];
  if (opts.dataDir) args.push(`--data-dir=${opts.dataDir}`);
  return startEmulator('Pub/Sub', args, port);
}

export async function startFirestoreEmulator(opts: { port?: number } = {}): Promise<RunningEmulator> {
  const port = opts.port || (await freePort());
  return startEmulator('Firestore', ['emulators', 'firestore', 'start', `--host-port=127.0.0.1:${port}`], port);
}

/** gcloud and the java runtime its emulators need are both on PATH. */
export function gcloudAvailable(): boolean {
  return onPath('gcloud') && onPath('java');
}

async function startEmulator(name: string, args: string[], port: number): Promise<RunningEmulator> {
  let proc = await launch(name, args, port);
  return {
    host: `127.0.0.1:${port}`,
    stop: () => proc.stop(),
    async restart() {
      await proc.stop();
      proc = await launch(name, args, port);
    },
  };
}

interface Launched {
  stop(): Promise<void>;
}

async function launch(name: string, args: string[], port: number): Promise<Launched> {
  // Otherwise the readiness poll could take whatever already listens there for the emulator.
  if (!(await portFree(port))) throw new Error(`${name} emulator cannot start: port ${port} is already in use`);
  const child = spawn('gcloud', [...args, '--quiet'], {
    detached: true, // own process group, so the java grandchild can be signalled with it
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, CLOUDSDK_CORE_DISABLE_PROMPTS: '1' },
  });
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-TAIL_CHARS);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let spawnError: Error | undefined;
  child.once('error', (err) => (spawnError = err));

  const watchdog = startWatchdog(child);

  const stop = async () => {
    watchdog.kill();
    signalGroup(child, 'SIGTERM');
    if (!(await groupGone(child, STOP_GRACE_MS))) {
      signalGroup(child, 'SIGKILL');
      await groupGone(child, STOP_GRACE_MS);
    }
    await Promise.race([exited, sleep(STOP_GRACE_MS)]);
  };

  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (spawnError || child.exitCode !== null || child.signalCode !== null) {
      await stop();
      const why = spawnError ? spawnError.message : `exited with ${child.exitCode ?? child.signalCode}`;
      throw new Error(`${name} emulator ${why} before answering on port ${port}.\nOutput tail:\n${tail}`);
    }
    if (await answers(port)) return { stop };
    await sleep(250);
  }
  await stop();
  throw new Error(
    `${name} emulator did not answer on port ${port} within ${READY_TIMEOUT_MS} ms.\nOutput tail:\n${tail}`,
  );
}

/**
 * A killed test runner (SIGKILL after a timeout) runs no exit handler, so a tiny shell holds a
 * pipe from this process and kills the emulator's group when the pipe closes.
 */
function startWatchdog(child: ChildProcess): { kill(): void } {
  if (child.pid === undefined) return { kill() {} };
  const watchdog = spawn('sh', ['-c', `read _; kill -KILL -${child.pid} 2>/dev/null`], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  watchdog.unref();
  (watchdog.stdin as unknown as { unref(): void }).unref();
  return { kill: () => watchdog.kill() };
}

/** Both emulators answer GET / with 200 "Ok" once they serve requests. */
async function answers(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2_000) });
    return res.ok && (await res.text()).trim() === 'Ok';
  } catch {
    return false;
  }
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals) {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // the group is already gone
  }
}

async function groupGone(child: ChildProcess, withinMs: number): Promise<boolean> {
  if (child.pid === undefined) return true;
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    try {
      process.kill(-child.pid, 0);
    } catch {
      return true;
    }
    await sleep(100);
  }
  return false;
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

function onPath(command: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * The emulator named by PUBSUB_EMULATOR_HOST / FIRESTORE_EMULATOR_HOST when it is set (stop()
 * then leaves it alone), otherwise a fresh one on a free port.
 */
export async function emulatorFromEnvOrStart(kind: 'pubsub' | 'firestore'): Promise<RunningEmulator> {
  const host = process.env[kind === 'pubsub' ? 'PUBSUB_EMULATOR_HOST' : 'FIRESTORE_EMULATOR_HOST'];
  if (host) return { host, stop: async () => {} };
  return kind === 'pubsub' ? startPubsubEmulator() : startFirestoreEmulator();
}
