import { randomUUID } from 'node:crypto';
import type { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createFirestore } from '@mi/lib/adapters/coordination';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let firestore: Firestore;

beforeAll(async () => {
  // A project of its own keeps this file's `feature_flags/defaults` away from other test files.
  api = await startApi({
    GOOGLE_CLOUD_PROJECT: `flags-api-${randomUUID().slice(0, 8)}`,
    FEATURE_FLAGS_CACHE_SECONDS: '1',
  });
  firestore = createFirestore({
    projectId: api.rt.config.GOOGLE_CLOUD_PROJECT,
    emulatorHost: api.rt.config.FIRESTORE_EMULATOR_HOST,
  });
  await firestore.doc('feature_flags/defaults').set({ flags: { live_insights: false, max_threads: 10 } });
});
afterAll(async () => {
  await firestore?.terminate();
  await api?.close();
});

const flagsOf = async (token: string) => {
  const res = await api.request('GET', '/feature-flags', { token });
  expect(res.status).toBe(200);
  return res.body;
};

describe('GET /feature-flags', () => {
  it("should serve the Firestore defaults overlaid with the caller's overrides", async () => {
    const alice = await api.token('alice');
    const bob = await api.token('bob');
    await firestore
      .doc(`feature_flags_users/${await api.userId(alice)}`)
      .set({ flags: { live_insights: true, theme: 'dark', nested: { no: 1 } } });
    expect(await flagsOf(alice)).toEqual({ flags: { live_insights: true, max_threads: 10, theme: 'dark' } });
    expect(await flagsOf(bob)).toEqual({ flags: { live_insights: false, max_threads: 10 } });
  });

  it('should pick up a changed override once the short cache expires', async () => {
    const carol = await api.token('carol');
    const doc = firestore.doc(`feature_flags_users/${await api.userId(carol)}`);
    await doc.set({ flags: { max_threads: 3 } });
    expect((await flagsOf(carol)).flags.max_threads).toBe(3);
    await doc.set({ flags: { max_threads: 50 } });
    expect((await flagsOf(carol)).flags.max_threads).toBe(3);
    // Once the 1 s cache TTL this file set has passed, the change is read.
    await vi.waitFor(async () => expect((await flagsOf(carol)).flags.max_threads).toBe(50), {
      timeout: 10_000,
      interval: 50,
    });
  });

  it('should answer 401 without credentials and 403 for the service scheme', async () => {
    expect((await api.request('GET', '/feature-flags')).status).toBe(401);
    expect((await api.request('GET', '/feature-flags', { token: api.serviceToken })).status).toBe(403);
  });

  it('should be documented in the OpenAPI document with bearer auth', async () => {
    const doc = await api.request('GET', '/openapi.json');
    expect(doc.body.paths['/feature-flags'].get.security).toEqual([{ bearerAuth: [] }]);
  });
});
