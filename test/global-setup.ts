// Boots the expensive shared parts once for the whole run: the gcloud Pub/Sub and
// Firestore emulators and our GCS emulator. Each test file gets its own database.
import type { TestProject } from 'vitest/node';
import { startPubsubEmulator, startFirestoreEmulator } from '../emulators/gcloud';
import { startGcsEmulator } from '../emulators/gcs/server';

export default async function setup(project: TestProject) {
  const [pubsub, firestore, gcs] = await Promise.all([
    startPubsubEmulator({}),
    startFirestoreEmulator({}),
    startGcsEmulator({}),
  ]);
  const env = {
    PUBSUB_EMULATOR_HOST: pubsub.host,
    FIRESTORE_EMULATOR_HOST: firestore.host,
    STORAGE_EMULATOR_HOST: gcs.url,
  };
  Object.assign(process.env, env);
  project.provide('emulatorEnv', env);
  return async () => {
    await Promise.allSettled([pubsub.stop(), firestore.stop(), gcs.stop()]);
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    emulatorEnv: Record<string, string>;
  }
}
