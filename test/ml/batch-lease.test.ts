// The batch pass's claim is a lease (decisions.md section 8), against a real API, the Pub/Sub
// emulator and the sweep: the claim's answer, its renewal with ML-Claim, the fencing of every
// batch write that carries a claim no longer current, and the sweep releasing expired claims
// (recording.finalized again with `attempt`, failed after ML_BATCH_MAX_ATTEMPTS).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { BusMessage } from '@mi/lib/adapters/bus';
import { runSweep } from '../../functions/sweep';
import { startApi, type ApiHarness } from '../harness';
import { createTake, stopTake, storeLiveSegment, type Take } from '../recording-fixtures';

let api: ApiHarness;
let alice: string;
const finalized: BusMessage[] = [];
let subscription: { close(): Promise<void> } | undefined;

beforeAll(async () => {
  api = await startApi({
    PUBSUB_TOPIC_RECORDING_FINALIZED: `finalized-${randomUUID().slice(0, 8)}`,
    ML_BATCH_CLAIM_LEASE_SECONDS: '600',
    ML_BATCH_MAX_ATTEMPTS: '3',
  });
  alice = await api.token('lease-alice');
  subscription = await api.rt.bus.subscribeInstance(
    api.config.PUBSUB_TOPIC_RECORDING_FINALIZED,
    `lease-${randomUUID().slice(0, 8)}`,
    (m) => void finalized.push(m),
  );
});

afterAll(async () => {
  await subscription?.close();
  await api?.close();
});

// A claim answer's claim_id (the schema's `string | null` is null only once the pass ended).
const withClaim = (claim: string | null) => ({ 'ml-claim': claim! });

const claim = (t: string, headers: Record<string, string> = {}) =>
  api.service(
    'PATCH',
    `/transcriptions/${t}`,
    { status: 'synthesizing', status_message: 'batch pass started' },
    headers,
  );

/** The claim's lease ran out (as if the pass had been silent for ML_BATCH_CLAIM_LEASE_SECONDS). */
const expire = (t: string) =>
  api.rt.db.query(
    'test.expire_claim',
    "UPDATE transcription SET claim_expires_at = now() - interval '1 second' WHERE id = $1",
    [t],
  );

const statusOf = async (t: string) => (await api.service('GET', `/transcriptions/${t}`)).body;
const historyOf = async (t: string) =>
  (await api.service('GET', `/transcriptions/${t}/status-history?limit=200`)).body.items.map(
    (h) => `${h.status}${h.status_message ? `: ${h.status_message}` : ''}`,
  );

/** A meeting with a transcription in transcribing, as the live path leaves it. */
async function transcribing(): Promise<{ meetingId: string; transcriptionId: string }> {
  const meetingId = await api.meeting(alice, 'recording');
  const transcriptionId = (await api.post(alice, `/meetings/${meetingId}/transcriptions`)).body.id as string;
  expect((await api.service('PATCH', `/transcriptions/${transcriptionId}`, { status: 'transcribing' })).status).toBe(
    200,
  );
  return { meetingId, transcriptionId };
}

/** A stopped take with frames 0–9, finalized by the sweep: its recording.finalized (attempt 1) published. */
async function finalizedTake(): Promise<Take> {
  const take = await createTake(api, alice);
  await storeLiveSegment(api, take, 0, 9);
  await stopTake(api, take);
  await runSweep(api.sweeper);
  await vi.waitFor(() => expect(offers(take)).toEqual([1]), { timeout: 15_000 });
  return take;
}

/** The `attempt` of every recording.finalized of the take seen on the topic, in arrival order. */
const offers = (take: Take) =>
  finalized.filter((m) => (m.data as any).meeting_id === take.meetingId).map((m) => (m.data as any).attempt);

const segment = (text: string, start_ms: number) => ({ text, start_ms, end_ms: start_ms + 500 });

describe('the batch claim', () => {
  it('should answer the claim with a claim_id and a claim_expires_at ML_BATCH_CLAIM_LEASE_SECONDS ahead', async () => {
    const { transcriptionId } = await transcribing();
    const claimed = await claim(transcriptionId);
    expect(claimed.status, claimed.text).toBe(200);
    expect(claimed.body).toMatchObject({ status: 'synthesizing', claim_id: expect.any(String) });
    const ahead = Date.parse(claimed.body.claim_expires_at!) - Date.parse(claimed.body.updated_at);
    expect(ahead).toBeGreaterThanOrEqual(600_000);
    expect(ahead).toBeLessThan(601_000);
  });

  it('should renew the claim with ML-Claim: 200, the same claim_id, a later claim_expires_at, no history row', async () => {
    const { transcriptionId } = await transcribing();
    const first = (await claim(transcriptionId)).body;
    const renewed = await claim(transcriptionId, withClaim(first.claim_id));
    expect(renewed.status, renewed.text).toBe(200);
    expect(renewed.body.claim_id).toBe(first.claim_id);
    expect(Date.parse(renewed.body.claim_expires_at!)).toBeGreaterThan(Date.parse(first.claim_expires_at!));
    expect(await historyOf(transcriptionId)).toEqual(['pending', 'transcribing', 'synthesizing: batch pass started']);
  });

  it('should answer a claim repeated with its Idempotency-Key (its answer lost) with the first answer, claim_id included', async () => {
    const { transcriptionId } = await transcribing();
    const key = { 'idempotency-key': randomUUID() };
    const first = await claim(transcriptionId, key);
    expect(first.status, first.text).toBe(200);
    const again = await claim(transcriptionId, key);
    expect(again.status, again.text).toBe(200);
    expect(again.text).toBe(first.text);
    // The same claim still holds: the pass goes on with it.
    const renewed = await claim(transcriptionId, withClaim(first.body.claim_id));
    expect(renewed.status, renewed.text).toBe(200);
  });

  it('should refuse a second claim while the lease lives, without ML-Claim or with another id: 409 invalid_state', async () => {
    const { transcriptionId } = await transcribing();
    const first = (await claim(transcriptionId)).body;
    for (const headers of [{}, withClaim(randomUUID())]) {
      const again = await claim(transcriptionId, headers);
      expect(again.status, again.text).toBe(409);
      expect(again.body.type).toMatch(/\/conflict$/);
    }
    expect((await statusOf(transcriptionId)).updated_at).toBe(first.updated_at);
  });

  it('should refuse a renewal of a claim that expired (409), and a new claim until the sweep released it', async () => {
    const { transcriptionId } = await transcribing();
    const first = (await claim(transcriptionId)).body;
    await expire(transcriptionId);
    const renewal = await claim(transcriptionId, withClaim(first.claim_id));
    expect(renewal.status, renewal.text).toBe(409);
    expect(renewal.body.detail).toMatch(/expired/);
    const fresh = await claim(transcriptionId);
    expect(fresh.status, fresh.text).toBe(409);
    expect(fresh.body.detail).toMatch(/sweep offers the take again/);
  });

  it('should refuse a claim that carries ML-Claim while nothing holds the transcription: 409', async () => {
    const { transcriptionId } = await transcribing();
    const refused = await claim(transcriptionId, withClaim(randomUUID()));
    expect(refused.status, refused.text).toBe(409);
    expect((await statusOf(transcriptionId)).status).toBe('transcribing');
  });

  it('should answer 422 to an ML-Claim that is not a uuid', async () => {
    const { transcriptionId } = await transcribing();
    const answer = await claim(transcriptionId, withClaim('not-a-claim'));
    expect(answer.status, answer.text).toBe(422);
  });
});

describe('batch writes carrying a claim', () => {
  /** Every batch write of docs/ml-integration.md step 10, with the given ML-Claim. */
  const batchWrites = (ids: { meetingId: string; transcriptionId: string }, claimId: string | null) => {
    const h = withClaim(claimId);
    return {
      'PUT segments': () =>
        api.service('PUT', `/transcriptions/${ids.transcriptionId}/segments`, { segments: [segment('late', 0)] }, h),
      'PUT synthesis': () =>
        api.service('PUT', `/meetings/${ids.meetingId}/synthesis`, { summary: 'late', key_points: [] }, h),
      'PATCH headline': () => api.service('PATCH', `/meetings/${ids.meetingId}`, { headline: 'late' }, h),
      'DELETE system tasks': () =>
        api.service('DELETE', `/meetings/${ids.meetingId}/tasks?source=system`, undefined, h),
      'POST system tasks': () =>
        api.service(
          'POST',
          `/meetings/${ids.meetingId}/tasks`,
          { tasks: [{ content: 'late' }] },
          {
            ...h,
            'idempotency-key': randomUUID(),
          },
        ),
      'PATCH completed': () =>
        api.service(
          'PATCH',
          `/transcriptions/${ids.transcriptionId}`,
          { status: 'completed', status_message: 'late' },
          h,
        ),
      'PATCH failed': () =>
        api.service('PATCH', `/transcriptions/${ids.transcriptionId}`, { status: 'failed', status_message: 'late' }, h),
    };
  };

  it('should refuse every batch write whose claim expired (409 invalid_state) and change nothing', async () => {
    const ids = await transcribing();
    const { claim_id } = (await claim(ids.transcriptionId)).body;
    await expire(ids.transcriptionId);
    for (const [name, write] of Object.entries(batchWrites(ids, claim_id))) {
      const answer = await write();
      expect({ name, status: answer.status }, answer.text).toEqual({ name, status: 409 });
      expect(answer.body.type).toMatch(/\/conflict$/);
      expect(answer.body.detail).toContain(claim_id);
    }
    const meeting = (await api.request('GET', `/meetings/${ids.meetingId}`, { token: alice })).body;
    expect(meeting).toMatchObject({ summary: null, headline: null });
    expect((await api.service('GET', `/transcriptions/${ids.transcriptionId}/segments`)).body.items).toEqual([]);
    expect((await api.request('GET', `/tasks?meeting_id=${ids.meetingId}`, { token: alice })).body.items).toEqual([]);
    expect((await statusOf(ids.transcriptionId)).status).toBe('synthesizing');
  });

  it('should take every batch write carrying the current claim, and writes without ML-Claim as before', async () => {
    const ids = await transcribing();
    const { claim_id } = (await claim(ids.transcriptionId)).body;
    const writes = Object.entries(batchWrites(ids, claim_id)).filter(([name]) => name !== 'PATCH failed');
    for (const [name, write] of writes) {
      const answer = await write();
      expect({ name, ok: answer.status < 300 }, answer.text).toEqual({ name, ok: true });
    }
    expect((await statusOf(ids.transcriptionId)).status).toBe('completed');
    // No claim, no fence (an ML built before leases keeps working).
    const unfenced = await api.service('PUT', `/meetings/${ids.meetingId}/synthesis`, {
      summary: 'again',
      key_points: [],
    });
    expect(unfenced.status, unfenced.text).toBe(204);
  });

  it("should keep a pass that lost its lease from overwriting the next pass's segments", async () => {
    const take = await finalizedTake();
    const t = take.transcriptionId;
    const lost = (await claim(t)).body.claim_id as string;
    await expire(t);
    await runSweep(api.sweeper);
    expect((await statusOf(t)).status).toBe('transcribing');
    const next = (await claim(t)).body.claim_id as string;
    const put = (claimId: string, text: string) =>
      api.service('PUT', `/transcriptions/${t}/segments`, { segments: [segment(text, 0)] }, withClaim(claimId));
    expect((await put(next, 'next pass')).status).toBe(204);
    const late = await put(lost, 'lost pass');
    expect(late.status, late.text).toBe(409);
    expect(late.body.detail).toMatch(/not the current claim/);
    const stored = (await api.service('GET', `/transcriptions/${t}/segments`)).body.items;
    expect(stored.map((s) => s.text)).toEqual(['next pass']);
  });

  it('should answer a repeated completion with the claim that completed it 200, and refuse that claim any other write', async () => {
    const ids = await transcribing();
    const { claim_id } = (await claim(ids.transcriptionId)).body;
    const complete = () =>
      api.service(
        'PATCH',
        `/transcriptions/${ids.transcriptionId}`,
        { status: 'completed', status_message: 'done' },
        withClaim(claim_id),
      );
    expect((await complete()).status).toBe(200);
    const repeat = await complete();
    expect(repeat.status, repeat.text).toBe(200);
    expect(repeat.body).toMatchObject({ status: 'completed', claim_id: null, claim_expires_at: null });
    const late = await batchWrites(ids, claim_id)['PUT segments']();
    expect(late.status, late.text).toBe(409);
    expect(await historyOf(ids.transcriptionId)).toEqual([
      'pending',
      'transcribing',
      'synthesizing: batch pass started',
      'completed: done',
    ]);
  });

  it('should answer a task write retried with its Idempotency-Key after the transcription completed as the first time', async () => {
    const ids = await transcribing();
    const { claim_id } = (await claim(ids.transcriptionId)).body;
    const key = randomUUID();
    const tasks = () =>
      api.service(
        'POST',
        `/meetings/${ids.meetingId}/tasks`,
        { tasks: [{ content: 'Send the deck' }] },
        {
          ...withClaim(claim_id),
          'idempotency-key': key,
        },
      );
    const first = await tasks();
    expect(first.status, first.text).toBe(201);
    const done = await api.service(
      'PATCH',
      `/transcriptions/${ids.transcriptionId}`,
      { status: 'completed' },
      withClaim(claim_id),
    );
    expect(done.status).toBe(200);
    const retried = await tasks();
    expect(retried.status, retried.text).toBe(201);
    expect(retried.body).toEqual(first.body);
    expect((await api.request('GET', `/tasks?meeting_id=${ids.meetingId}`, { token: alice })).body.items).toHaveLength(
      1,
    );
  });
});

describe('the sweep releasing expired claims', () => {
  it('should put an expired claim back to transcribing and publish recording.finalized again with attempt 2', async () => {
    const take = await finalizedTake();
    const t = take.transcriptionId;
    await claim(t);
    await expire(t);
    const counts = await runSweep(api.sweeper);
    expect(counts.claimsReleased).toBeGreaterThanOrEqual(1);
    expect(await statusOf(t)).toMatchObject({ status: 'transcribing', status_message: 'batch claim expired' });
    expect((await historyOf(t)).slice(-2)).toEqual([
      'synthesizing: batch pass started',
      'transcribing: batch claim expired',
    ]);
    await vi.waitFor(() => expect(offers(take)).toEqual([1, 2]), { timeout: 15_000 });
    const again = finalized.filter((m) => (m.data as any).meeting_id === take.meetingId)[1];
    expect(again.data).toMatchObject({
      transcription_id: t,
      audio_version: 1,
      storage_path: `recordings/${take.meetingId}/v1/audio.wav`,
      is_degraded: false,
      missing_ranges: [],
    });
    expect(again.attributes).toMatchObject({ meeting_id: take.meetingId, audio_version: '1' });
    expect(await api.lastEvent(take.userId)).toMatchObject({ entity: 'transcription', action: 'updated', id: t });
    // The next pass claims the re-offered take.
    expect((await claim(t)).status).toBe(200);
  });

  it('should leave a live claim alone', async () => {
    const take = await finalizedTake();
    const { claim_id } = (await claim(take.transcriptionId)).body;
    await runSweep(api.sweeper);
    expect(await statusOf(take.transcriptionId)).toMatchObject({ status: 'synthesizing' });
    expect((await claim(take.transcriptionId, withClaim(claim_id))).status).toBe(200);
    expect(offers(take)).toEqual([1]);
  });

  it('should give the take up after ML_BATCH_MAX_ATTEMPTS expired claims: failed, "batch pass abandoned"', async () => {
    const take = await finalizedTake();
    const t = take.transcriptionId;
    for (const attempt of [2, 3]) {
      expect((await claim(t)).status).toBe(200);
      await expire(t);
      await runSweep(api.sweeper);
      await vi.waitFor(() => expect(offers(take).at(-1)).toBe(attempt), { timeout: 15_000 });
    }
    expect((await claim(t)).status).toBe(200);
    await expire(t);
    const counts = await runSweep(api.sweeper);
    expect(counts.claimsAbandoned).toBeGreaterThanOrEqual(1);
    expect(await statusOf(t)).toMatchObject({ status: 'failed', status_message: 'batch pass abandoned' });
    expect((await historyOf(t)).filter((h: string) => h.includes('batch claim expired'))).toHaveLength(2);
    expect(offers(take)).toEqual([1, 2, 3]);
    // Given up: a claim of a redelivered message is refused (failed → synthesizing is no transition).
    expect((await claim(t)).status).toBe(409);
  });

  it('should release a claim taken before leases existed (no claim_expires_at) once it is a lease old', async () => {
    const take = await finalizedTake();
    const t = take.transcriptionId;
    await claim(t);
    await api.rt.db.query(
      'test.pre_lease_claim',
      "UPDATE transcription SET claim_id = NULL, claim_expires_at = NULL, updated_at = now() - interval '601 seconds' WHERE id = $1",
      [t],
    );
    await runSweep(api.sweeper);
    expect((await statusOf(t)).status).toBe('transcribing');
    await vi.waitFor(() => expect(offers(take)).toEqual([1, 2]), { timeout: 15_000 });
  });

  it('should release an expired claim of a transcription with no take back to transcribing, offering nothing', async () => {
    const ids = await transcribing();
    await claim(ids.transcriptionId);
    await expire(ids.transcriptionId);
    await runSweep(api.sweeper);
    expect(await statusOf(ids.transcriptionId)).toMatchObject({
      status: 'transcribing',
      status_message: 'batch claim expired',
    });
  });
});
