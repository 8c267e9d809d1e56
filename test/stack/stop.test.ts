// Stopping `npm start` by signalling any process of it (npm, which does not pass signals on to
// the stack; tsx; the stack's node) stops everything: no process of the tree is left, nothing
// listens on any port it had, /healthz no longer answers.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '@mi/lib/dev/free-port';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { spawnNpmStart, untilReady, type NpmStart } from './npm-start';
import { commandLine, listening, listeningPorts, processTree, running } from './processes';
import { until } from '../support/poll';

const dirs: string[] = [];
const started: NpmStart[] = [];
afterAll(() => {
  for (const s of started) {
    for (const pid of processTree(s.child.pid!)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

type Target = 'npm' | 'tsx' | 'node';

/** The process of the `npm start` tree that plays the given part. */
function pidOf(s: NpmStart, target: Target): number {
  if (target === 'npm') return s.child.pid!;
  const pids = processTree(s.child.pid!);
  const match =
    target === 'tsx'
      ? (c: string) => /\.bin\/tsx emulators\/start\.ts$/.test(c)
      : (c: string) => /tsx\/dist\/loader\.mjs emulators\/start\.ts$/.test(c);
  const pid = pids.find((p) => match(commandLine(p)));
  if (!pid) throw new Error(`no ${target} process in:\n${pids.map((p) => `${p} ${commandLine(p)}`).join('\n')}`);
  return pid;
}

async function startAndSignal(
  target: Target,
  signal: NodeJS.Signals,
  env: Record<string, string | undefined>,
  whileRunning?: (dataDir: string) => Promise<void>,
) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'mi-stop-'));
  dirs.push(dataDir);
  const s = await spawnNpmStart({ DATA_DIR: dataDir, ...env });
  started.push(s);
  await untilReady(s);
  const tree = processTree(s.child.pid!);
  const ports = listeningPorts(tree);
  const commands = tree.map(commandLine);
  await whileRunning?.(dataDir);
  expect(ports).toEqual(expect.arrayContaining([s.port, s.mlPort]));

  process.kill(pidOf(s, target), signal); // that process alone, not its group
  const context = () =>
    `left: ${tree
      .filter(running)
      .map((p) => `${p} ${commandLine(p)}`)
      .join('\n')}\nlistening: ${ports.filter(listening)}\noutput:\n${s.output()}`;
  await until('every process of the tree gone', () => tree.every((p) => !running(p)), {
    timeoutMs: 30_000,
    intervalMs: 250,
    context,
  });
  await until('no port left listening', () => ports.every((p) => !listening(p)), {
    timeoutMs: 5_000,
    intervalMs: 250,
    context,
  });
  expect(
    await fetch(`${s.url}/healthz`).then(
      () => 'answered',
      () => 'refused',
    ),
  ).toBe('refused');
  expect(s.output()).toContain('local stack stopped');
  return { tree, commands, ports };
}

describe('stopping npm start', () => {
  it('should stop the gcloud emulators and everything else when npm alone gets SIGTERM', async () => {
    // On the ports it is told (fixed by default: 8085, 8086, 4443), written to a file a shell sources.
    const [pubsub, firestore, storage] = [await freePort(), await freePort(), await freePort()];
    const own = {
      PUBSUB_EMULATOR_HOST: undefined,
      FIRESTORE_EMULATOR_HOST: undefined,
      STORAGE_EMULATOR_HOST: undefined,
      STORAGE_SIGNER_KEY_FILE: undefined,
      PUBSUB_EMULATOR_PORT: String(pubsub),
      FIRESTORE_EMULATOR_PORT: String(firestore),
      STORAGE_EMULATOR_PORT: String(storage),
      STORAGE_BUCKET: 'stack-env-bucket',
    };
    const sourced = async (dataDir: string) => {
      const script = `source ${path.join(dataDir, 'local-stack.env')} && echo "$PUBSUB_EMULATOR_HOST $FIRESTORE_EMULATOR_HOST" && gcloud storage ls`;
      const gcloudConfig = mkdtempSync(path.join(tmpdir(), 'mi-gcloud-'));
      dirs.push(gcloudConfig);
      const env = Object.fromEntries(
        Object.entries(process.env).filter(([k]) => !k.startsWith('CLOUDSDK_') && !k.endsWith('_EMULATOR_HOST')),
      );
      const { stdout } = await promisify(execFile)('bash', ['-c', script], {
        env: { ...env, CLOUDSDK_CONFIG: gcloudConfig },
      });
      expect(stdout).toContain(`127.0.0.1:${pubsub} 127.0.0.1:${firestore}`);
      expect(stdout).toContain('gs://stack-env-bucket/');
    };
    const { tree, commands, ports } = await startAndSignal('npm', 'SIGTERM', own, sourced);
    expect(ports).toEqual(expect.arrayContaining([pubsub, firestore, storage]));
    expect(commands.filter((c) => c.startsWith('java'))).toHaveLength(2);
    // The stack started its own emulators: Java processes and their ports were part of it.
    expect(tree.length).toBeGreaterThanOrEqual(6);
    expect(ports.length).toBeGreaterThanOrEqual(5); // API, ML, GCS, Pub/Sub, Firestore
  }, 240_000);

  for (const [target, signal] of [
    ['npm', 'SIGHUP'],
    ['tsx', 'SIGHUP'],
    ['node', 'SIGTERM'],
  ] as const) {
    it(`should stop everything when ${target} alone gets ${signal}`, async () => {
      // The run's emulators: this start has no Java of its own, and is quicker.
      await startAndSignal(target, signal, { ...inject('emulatorEnv'), STORAGE_BUCKET: `stop-${target}` });
    }, 180_000);
  }
});
