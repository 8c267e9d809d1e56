// The instance heartbeat: one Firestore document per instance, written once per interval, keeps
// its takes' leases and its connections' presence alive past their lifetimes, and a lease another
// instance took makes the take let go.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createCoordination, createFirestore, type Coordination } from '@mi/lib/adapters/coordination';
import type { OpenedDatabase } from '@mi/lib/db/open';
import { recordingLeaseKey } from '@mi/lib/repositories/recordings';
import { TestClient, createMeeting, fileEnv, openTestDatabase, startInstance, token, type Instance } from './helpers';

const TTL_MS = 1_500;
let database: OpenedDatabase;
let core: Instance;
/** What another instance sees of the same collections. */
let other: Coordination;
const prefix = `hb${randomUUID().slice(0, 8)}_`;
const firestore = { projectId: 'heartbeat-test', collectionPrefix: prefix };

beforeAll(async () => {
  database = await openTestDatabase();
  other = createCoordination(firestore);
  core = await startInstance(database, fileEnv(), {
    coordination: createCoordination(firestore),
    leaseTtlMs: TTL_MS,
    heartbeatMs: 500,
  });
});

afterAll(async () => {
  await core?.close();
  await other?.close();
  await database?.close();
});

/** The instance's document: until when it is alive, and how many connections it holds. */
async function instanceDoc(instanceId: string): Promise<{ expiresAt: number; connections: number }> {
  const db = createFirestore(firestore);
  try {
    const doc = (await db.collection(`${prefix}instances`).doc(encodeURIComponent(instanceId)).get()).data();
    return { expiresAt: doc?.expires_at?.toMillis() ?? 0, connections: Object.keys(doc?.connections ?? {}).length };
  } finally {
    await db.terminate();
  }
}

describe('the instance heartbeat', () => {
  it("should keep the instance's document (its connections' presence) alive past its lifetime, and drop a closed connection", async () => {
    const client = await TestClient.connect(core.wsUrl, await token(core.config, `hb-${randomUUID()}`));
    await vi.waitFor(async () => expect((await instanceDoc(core.live.instanceId)).connections).toBe(1), {
      timeout: 10_000,
    });
    // Renewed past three lifetimes: without the heartbeat it lapses after one.
    const since = Date.now();
    await vi.waitFor(
      async () => expect((await instanceDoc(core.live.instanceId)).expiresAt).toBeGreaterThan(since + 3 * TTL_MS),
      { timeout: 10 * TTL_MS + 10_000, interval: 300 },
    );
    expect((await instanceDoc(core.live.instanceId)).connections).toBe(1);
    client.close();
    await vi.waitFor(async () => expect((await instanceDoc(core.live.instanceId)).connections).toBe(0), {
      timeout: 10_000,
    });
  });

  it("should renew a take's lease past its lifetime, and let the take go once another instance took it", async () => {
    const userToken = await token(core.config, `hb-${randomUUID()}`);
    const meetingId = await createMeeting(core, userToken);
    const client = await TestClient.connect(core.wsUrl, userToken);
    const started = await client.start(meetingId);
    const key = recordingLeaseKey(meetingId, started.audio_version);
    // Renewed past three lifetimes, by the same owner at the same epoch (never lapsed and retaken).
    const since = Date.now();
    await vi.waitFor(
      async () => expect((await other.get(key))!.expiresAt.getTime()).toBeGreaterThan(since + 3 * TTL_MS),
      { timeout: 10 * TTL_MS + 10_000, interval: 300 },
    );
    expect(await other.get(key)).toMatchObject({ owner: core.live.instanceId, epoch: 1 });

    await other.takeOver(key, 'another-instance', 60_000);
    const released = await client.waitFor({ type: 'RecordingReleased' }, { timeoutMs: 10_000 });
    expect(released).toMatchObject({ meeting_id: meetingId, audio_version: started.audio_version });
    expect(core.live.recorders.has(key)).toBe(false);
    expect(await other.get(key)).toMatchObject({ owner: 'another-instance', epoch: 2 });
    client.close();
  });
});
