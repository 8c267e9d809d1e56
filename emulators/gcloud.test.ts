import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { gcloudAvailable, startFirestoreEmulator, startPubsubEmulator, type RunningEmulator } from './gcloud';

/** Processes whose command line names the emulator's port: gcloud, its shell wrapper, java. */
function processesOn(host: string): string[] {
  const port = host.split(':')[1];
  const lines = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).split('\n');
  return lines.filter((l) => /gcloud|java|emulator/.test(l) && new RegExp(`[=:]${port}\\b`).test(l));
}

async function answers(host: string): Promise<boolean> {
  try {
    return (await fetch(`http://${host}/`, { signal: AbortSignal.timeout(2_000) })).ok;
  } catch {
    return false;
  }
}

async function expectGone(emulator: RunningEmulator) {
  expect(await answers(emulator.host)).toBe(false);
  expect(processesOn(emulator.host)).toEqual([]);
}

describe.runIf(gcloudAvailable())('gcloud emulators', () => {
  it('should start the Firestore emulator on a free port and leave nothing behind on stop', async () => {
    const firestore = await startFirestoreEmulator();
    try {
      expect(firestore.host).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(await answers(firestore.host)).toBe(true);
      expect(processesOn(firestore.host).some((l) => l.startsWith('java'))).toBe(true);
    } finally {
      await firestore.stop();
    }
    await expectGone(firestore);
  }, 120_000);

  it('should restart the Pub/Sub emulator on the same port and leave nothing behind on stop', async () => {
    const pubsub = await startPubsubEmulator({});
    try {
      expect(await answers(pubsub.host)).toBe(true);
      await pubsub.restart!();
      expect(await answers(pubsub.host)).toBe(true);
      expect(processesOn(pubsub.host).filter((l) => l.startsWith('java'))).toHaveLength(1);
    } finally {
      await pubsub.stop();
    }
    await expectGone(pubsub);
  }, 120_000);

  it('should refuse a port that is already taken', async () => {
    const blocker = createServer().listen(0, '127.0.0.1');
    await once(blocker, 'listening');
    try {
      const { port } = blocker.address() as AddressInfo;
      await expect(startFirestoreEmulator({ port })).rejects.toThrow(`port ${port} is already in use`);
    } finally {
      blocker.close();
    }
  });

  it('should fail with the emulator’s output when it exits before answering', async () => {
    // gcloud's launcher script exits at once when its Python interpreter is missing.
    process.env.CLOUDSDK_PYTHON = '/nonexistent/python3';
    try {
      await expect(startPubsubEmulator({})).rejects.toThrow(
        /Pub\/Sub emulator exited with 127 .*\nOutput tail:\n.*nonexistent\/python3: not found/,
      );
    } finally {
      delete process.env.CLOUDSDK_PYTHON;
    }
  });
});
