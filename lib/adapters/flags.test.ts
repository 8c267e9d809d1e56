import { randomUUID } from 'node:crypto';
import type { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { emulatorFromEnvOrStart, type RunningEmulator } from '../../emulators/gcloud';
import { createFirestore } from './coordination';
import { createFeatureFlags } from './flags';

// A project of its own keeps this file's `feature_flags/defaults` away from other tests.
const projectId = `flags-${randomUUID().slice(0, 8)}`;
let emulator: RunningEmulator;
let db: Firestore;

const setDefaults = (flags: object) => db.doc('feature_flags/defaults').set({ flags });
const setUser = (userId: string, flags: object) => db.doc(`feature_flags_users/${userId}`).set({ flags });

beforeAll(async () => {
  emulator = await emulatorFromEnvOrStart('firestore');
  db = createFirestore({ projectId, emulatorHost: emulator.host });
});

afterAll(async () => {
  await db?.terminate();
  await emulator?.stop();
});

describe('feature flags', () => {
  it('should layer code defaults, Firestore defaults and the user’s overrides', async () => {
    await setDefaults({ live_insights: true, max_speakers: 8, banner: 'hello' });
    await setUser('u-layer', { max_speakers: 12, ignored: { nested: true } });
    const flags = createFeatureFlags({
      firestore: db,
      defaults: { live_insights: false, beta: false, banner: 'code' },
    });

    expect(await flags.forUser('u-layer')).toEqual({
      live_insights: true,
      beta: false,
      max_speakers: 12,
      banner: 'hello',
    });
    expect(await flags.forUser('u-nobody')).toEqual({
      live_insights: true,
      beta: false,
      max_speakers: 8,
      banner: 'hello',
    });
  });

  it('should serve the cached value until the TTL passes, then the new one', async () => {
    await setDefaults({ live_insights: true });
    const flags = createFeatureFlags({ firestore: db, cacheTtlMs: 500 });
    expect(await flags.forUser('u-cache')).toEqual({ live_insights: true });

    await setUser('u-cache', { live_insights: false });
    expect(await flags.forUser('u-cache')).toEqual({ live_insights: true });

    // Once the 500 ms cache TTL this test set has passed, the change is read.
    await vi.waitFor(async () => expect(await flags.forUser('u-cache')).toEqual({ live_insights: false }), {
      timeout: 10_000,
      interval: 50,
    });
  });

  it('should read through a client of its own when given a project id', async () => {
    await setDefaults({ live_insights: false });
    await setUser('u-own', { beta: true });
    const flags = createFeatureFlags({ projectId, emulatorHost: emulator.host, defaults: { beta: false } });
    try {
      expect(await flags.forUser('u-own')).toEqual({ beta: true, live_insights: false });
    } finally {
      await flags.close();
    }
  });
});
