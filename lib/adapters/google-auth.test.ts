// Our configuration of the Google clients prints nothing: no deprecation warning from
// google-auth-library and no GCE metadata probe, on the emulators the local stack and tests use.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { emulatorFromEnvOrStart, type RunningEmulator } from '../../emulators/gcloud';
import { loadOrCreateSignerKey } from '../../emulators/gcs/signer-key';
import { startGcsEmulator, type GcsEmulator } from '../../emulators/gcs/server';
import { createBus } from './bus';
import { createCoordination } from './coordination';
import { createObjectStore } from './storage';

let dir: string;
let gcs: GcsEmulator;
let pubsub: RunningEmulator;
let firestore: RunningEmulator;
const warnings: string[] = [];
const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'google-auth-test-'));
  [pubsub, firestore] = await Promise.all([emulatorFromEnvOrStart('pubsub'), emulatorFromEnvOrStart('firestore')]);
  process.on('warning', onWarning);
});
afterAll(async () => {
  process.off('warning', onWarning);
  await Promise.allSettled([gcs?.stop(), pubsub?.stop(), firestore?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

it('should configure the storage, Pub/Sub and Firestore clients without a warning, and still sign URLs', async () => {
  const consoleWarn = vi.spyOn(console, 'warn');
  const keyFile = join(dir, 'signer.json');
  gcs = await startGcsEmulator({ trustedKeys: [loadOrCreateSignerKey(keyFile)] });
  const store = createObjectStore({ bucket: 'auth-test', emulatorHost: gcs.url, signerKeyFile: keyFile });
  await store.ensureBucket();
  await store.write('a.txt', Buffer.from('hello'), { contentType: 'text/plain' });
  const { url } = await store.signedReadUrl('a.txt', 60);
  expect(await (await fetch(url)).text()).toBe('hello');

  const bus = createBus({ projectId: 'auth-test', emulatorHost: pubsub.host });
  await bus.publish('auth-test-topic', { ok: true });
  await bus.close();
  const coordination = createCoordination({ projectId: 'auth-test', emulatorHost: firestore.host });
  expect(await coordination.acquire('auth-test-lease', 'me', 10_000)).not.toBeNull();

  expect(consoleWarn.mock.calls.map((c) => String(c[0])).filter((m) => /deprecated/i.test(m))).toEqual([]);
  expect(warnings.filter((w) => /deprecat|MetadataLookup/i.test(w))).toEqual([]);
});
