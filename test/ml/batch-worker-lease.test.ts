// The local fake batch worker holds its claim as a real one must (decisions.md section 8): a pass
// that dies after its claim is re-offered by the sweep (recording.finalized with attempt 2, seen
// on the Pub/Sub emulator) and completed by the next pass; a slow pass renews its lease, so the
// sweep leaves it alone.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { BusMessage } from '@mi/lib/adapters/bus';
import { mlBatchSubscription } from '@mi/lib/ml/contract';
import { startFakeMl, type FakeMl } from '../../emulators/ml/server';
import { runSweep } from '../../functions/sweep';
import { startApi, type ApiHarness } from '../harness';
import { createTake, stopTake, storeLiveSegment, type Take } from '../recording-fixtures';

let api: ApiHarness;
let ml: FakeMl;
let alice: string;
const finalized: BusMessage[] = [];
let subscription: { close(): Promise<void> } | undefined;
/** Transcriptions whose pass waits in `slowPass` before its first write. */
const slow = new Map<string, () => Promise<void>>();

beforeAll(async () => {
  // A short lease (renewed every 2 s) keeps the renewal test short; the dead pass's lease is expired by hand.
  api = await startApi({
    PUBSUB_TOPIC_RECORDING_FINALIZED: `finalized-${randomUUID().slice(0, 8)}`,
    ML_BATCH_CLAIM_LEASE_SECONDS: '4',
  });
  alice = await api.token('worker-alice');
  const topic = api.config.PUBSUB_TOPIC_RECORDING_FINALIZED;
  subscription = await api.rt.bus.subscribeInstance(topic, `observer-${randomUUID().slice(0, 8)}`, (m) => {
    finalized.push(m);
  });
  ml = await startFakeMl({
    port: 0,
    coreUrl: api.url,
    serviceToken: api.serviceToken,
    config: api.config,
    batchPause: async (msg) => slow.get(msg.transcription_id!)?.(),
  });
  await api.rt.bus.ensureQueue(topic, mlBatchSubscription(topic));
});

afterAll(async () => {
  await ml?.stop();
  await subscription?.close();
  await api?.close();
});

const statusOf = async (t: string) =>
  (await api.request('GET', `/transcriptions/${t}`, { token: api.serviceToken })).body.status as string;
const historyOf = async (t: string) =>
  (
    await api.request('GET', `/transcriptions/${t}/status-history?limit=200`, { token: api.serviceToken })
  ).body.items.map((h) => `${h.status}: ${h.status_message ?? ''}`) as string[];
const offers = (take: Take) =>
  finalized.filter((m) => (m.data as any).meeting_id === take.meetingId).map((m) => (m.data as any).attempt);
const claimExpiry = async (t: string) =>
  (
    await api.rt.db.query<{ at: string | null }>(
      'test.claim_expiry',
      'SELECT claim_expires_at::text AS at FROM transcription WHERE id = $1',
      [t],
    )
  ).rows[0].at;

/** A stopped take with frames 0–9 (not finalized yet). */
async function stoppedTake(): Promise<Take> {
  const take = await createTake(api, alice);
  await storeLiveSegment(api, take, 0, 9);
  await stopTake(api, take);
  return take;
}

describe('the fake batch worker and its lease', () => {
  it('should re-offer the take of a pass that died after its claim, and the next pass completes it', async () => {
    const take = await stoppedTake();
    const t = take.transcriptionId;
    // The pass that dies: it claims, then is never heard of again.
    const dead = await api.request('PATCH', `/transcriptions/${t}`, {
      token: api.serviceToken,
      body: { status: 'synthesizing', status_message: 'batch pass started' },
    });
    expect(dead.status, dead.text).toBe(200);
    await runSweep(api.sweeper); // finalizes the take: attempt 1 finds it claimed
    await vi.waitFor(() => expect(offers(take)).toEqual([1]), { timeout: 15_000 });
    await api.rt.db.query(
      'test.expire_claim',
      "UPDATE transcription SET claim_expires_at = now() - interval '1 second' WHERE id = $1",
      [t],
    );
    await runSweep(api.sweeper);
    await vi.waitFor(() => expect(offers(take)).toEqual([1, 2]), { timeout: 15_000 });
    await vi.waitFor(async () => expect(await statusOf(t)).toBe('completed'), { timeout: 30_000, interval: 200 });
    expect(await historyOf(t)).toEqual([
      'transcribing: ',
      'synthesizing: batch pass started',
      'transcribing: batch claim expired',
      'synthesizing: batch pass started',
      'completed: batch pass completed',
    ]);
    const segments = (await api.request('GET', `/transcriptions/${t}/segments`, { token: api.serviceToken })).body;
    expect(segments.items.every((s) => s.confidence === 0.97)).toBe(true);
  });

  it('should renew its claim while a pass takes longer than the lease, and the sweep leaves it alone', async () => {
    const take = await stoppedTake();
    const t = take.transcriptionId;
    const seen = new Set<string>();
    // The pass waits (after its claim) until its lease was renewed twice, the sweep running meanwhile.
    slow.set(t, () =>
      vi.waitFor(
        async () => {
          await runSweep(api.sweeper);
          const at = await claimExpiry(t);
          if (at) seen.add(at);
          expect(seen.size).toBeGreaterThanOrEqual(3);
        },
        { timeout: 30_000, interval: 250 },
      ),
    );
    await runSweep(api.sweeper);
    await vi.waitFor(async () => expect(await statusOf(t)).toBe('completed'), { timeout: 45_000, interval: 200 });
    expect(seen.size).toBeGreaterThanOrEqual(3);
    expect((await historyOf(t)).filter((h) => h.includes('batch claim expired'))).toEqual([]);
    expect(offers(take)).toEqual([1]);
  }, 60_000);
});
