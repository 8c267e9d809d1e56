// Boots the expensive shared parts once for the whole run: the database engine (a native
// PostgreSQL cluster with the schema's template, or PGlite), the gcloud Pub/Sub and Firestore
// emulators and our GCS emulator. Each test file gets its own database.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { loadOrCreateSignerKey } from '../emulators/gcs/signer-key';
import { startPubsubEmulator, startFirestoreEmulator } from '../emulators/gcloud';
import { startGcsEmulator } from '../emulators/gcs/server';
import { startTestEngine, type TestEngine } from './support/database';

export interface SharedParts {
  env: Record<string, string>;
  engine: TestEngine;
}

/** Starts the engine and the emulators; `stop` ends them. */
export async function startSharedParts(): Promise<SharedParts & { stop(): Promise<void> }> {
  // The storage client signs URLs with this key; the GCS emulator verifies against it.
  const keyDir = mkdtempSync(join(tmpdir(), 'mi-gcs-key-'));
  const signerKeyFile = join(keyDir, 'gcs-signer.json');
  const signer = loadOrCreateSignerKey(signerKeyFile);
  const [database, pubsub, firestore, gcs] = await Promise.all([
    startTestEngine(),
    startPubsubEmulator({}),
    startFirestoreEmulator({}),
    startGcsEmulator({ trustedKeys: [signer] }),
  ]);
  const env = {
    PUBSUB_EMULATOR_HOST: pubsub.host,
    FIRESTORE_EMULATOR_HOST: firestore.host,
    STORAGE_EMULATOR_HOST: gcs.url,
    STORAGE_SIGNER_KEY_FILE: signerKeyFile,
  };
  return {
    env,
    engine: database.engine,
    stop: async () => {
      await Promise.allSettled([pubsub.stop(), firestore.stop(), gcs.stop(), database.stop()]);
      rmSync(keyDir, { recursive: true, force: true });
    },
  };
}

/**
 * TEST_SHARED_PARTS (JSON SharedParts): parts a caller already runs, reused instead of started
 * (test:guards runs vitest once per guard; starting the emulators each time was most of its time).
 */
export default async function setup(project: TestProject) {
  const reused = process.env.TEST_SHARED_PARTS;
  const parts = reused ? { ...(JSON.parse(reused) as SharedParts), stop: async () => {} } : await startSharedParts();
  Object.assign(process.env, parts.env);
  project.provide('emulatorEnv', parts.env);
  project.provide('database', parts.engine);
  const { engine } = parts;
  console.log(`database: ${engine.label}${engine.kind === 'pglite' ? ` (${engine.why})` : ''}`);
  return parts.stop;
}

declare module 'vitest' {
  export interface ProvidedContext {
    emulatorEnv: Record<string, string>;
    database: TestEngine;
  }
}
