// Runs `npm start` as a user does, in its own process group, on free ports and a given DATA_DIR.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { freePort } from '@mi/lib/dev/free-port';
import { until } from '../support/poll';

export const ROOT = path.resolve(import.meta.dirname, '../..');

export interface NpmStart {
  child: ChildProcess;
  port: number;
  mlPort: number;
  url: string;
  output(): string;
  exited: Promise<number | null>;
}

export async function spawnNpmStart(env: Record<string, string | undefined>): Promise<NpmStart> {
  const [port, mlPort] = [await freePort(), await freePort()];
  // undefined removes a variable (e.g. the run's emulators, so that the stack starts its own).
  const merged: Record<string, string | undefined> = {
    ...process.env,
    APP_ENV: 'development',
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
    CORE_PORT: String(port),
    ML_PORT: String(mlPort),
    // Emulators the stack starts itself take any free port in tests (their fixed defaults would collide across files).
    PUBSUB_EMULATOR_PORT: '0',
    FIRESTORE_EMULATOR_PORT: '0',
    STORAGE_EMULATOR_PORT: '0',
    ...env,
  };
  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    env: Object.fromEntries(Object.entries(merged).filter(([, v]) => v !== undefined)) as Record<string, string>,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, port, mlPort, url: `http://localhost:${port}`, output: () => output, exited };
}

/** Resolves once /healthz answers 200 (the stack answers 503 while it starts); fails at once if it exits. */
export async function untilReady(s: Pick<NpmStart, 'child' | 'port' | 'output'>, withinMs = 150_000): Promise<void> {
  const state = await until(
    `npm start to answer /healthz on port ${s.port}`,
    async () =>
      s.child.exitCode !== null
        ? `exited ${s.child.exitCode}`
        : (await fetch(`http://127.0.0.1:${s.port}/healthz`)).status === 200 || undefined,
    { timeoutMs: withinMs, intervalMs: 250, context: s.output },
  );
  if (state !== true) throw new Error(`npm start ${state}:\n${s.output()}`);
}
