// The batch pass's claim, its renewal, its release by the sweep and the writes it fences, racing
// each other on native PostgreSQL (decisions.md section 8). An outside transaction makes one of
// the moves (a renewal, a release, a new claim) and holds the row; the other is started, and the
// outside transaction commits once the database shows it waiting. Each guarded read waits and then
// sees the move; without its lock it acts on the row as it was.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { runSweep } from '../../functions/sweep';
import type { ApiHarness } from '../harness';
import { native, withNativeApi } from './native-api';
import { lockWaiters, lockWaits, outsideClient } from '../support/lock-waits';

let api: ApiHarness;
let alice: string;

withNativeApi(
  async (started) => {
    api = started;
    alice = await api.token('claims-alice');
  },
  { PUBSUB_TOPIC_RECORDING_FINALIZED: `finalized-${randomUUID().slice(0, 8)}` },
);

const claim = (t: string, headers: Record<string, string> = {}) =>
  api.service(
    'PATCH',
    `/transcriptions/${t}`,
    { status: 'synthesizing', status_message: 'batch pass started' },
    headers,
  );

/** A transcription claimed by a batch pass: its ids and the claim. */
async function claimed() {
  const meetingId = await api.meeting(alice, 'recording');
  const t = (await api.post(alice, `/meetings/${meetingId}/transcriptions`)).body.id as string;
  expect((await api.service('PATCH', `/transcriptions/${t}`, { status: 'transcribing' })).status).toBe(200);
  const answer = await claim(t);
  expect(answer.status, answer.text).toBe(200);
  return { meetingId, t, claimId: answer.body.claim_id as string };
}

const expire = (t: string) =>
  api.rt.db.query(
    'test.expire_claim',
    "UPDATE transcription SET claim_expires_at = now() - interval '1 second' WHERE id = $1",
    [t],
  );

const row = async (t: string) =>
  (
    await api.rt.db.query<{ status: string; claim_id: string; claim_expirations: number }>(
      'test.claim_row',
      'SELECT status, claim_id, claim_expirations FROM transcription WHERE id = $1',
      [t],
    )
  ).rows[0];

const expiredHistory = async (t: string) =>
  (
    await api.rt.db.query(
      'test.claim_history',
      "SELECT 1 FROM transcription_status_history WHERE transcription_id = $1 AND status_message = 'batch claim expired'",
      [t],
    )
  ).rows.length;

/** Runs `act` while an outside transaction has run `change` on the transcription; commits once `act` waits (or is done). */
async function whileOutside<T>(change: string, t: string, act: () => Promise<T>, waiters = 1): Promise<T> {
  const outside = await outsideClient(api);
  try {
    await outside.query('BEGIN');
    await outside.query(change, [t]);
    let done = false;
    const result = act().finally(() => (done = true));
    await expect
      .poll(async () => done || (await lockWaiters(api)) >= waiters, { timeout: 20_000, interval: 20 })
      .toBe(true);
    await outside.query('COMMIT');
    return await result;
  } finally {
    await outside.end();
  }
}

// The take was released and claimed by the next pass, committing while the write checks its claim.
const claimedAgain =
  "UPDATE transcription SET claim_id = gen_random_uuid(), claim_expires_at = now() + interval '10 minutes' WHERE id = $1";
// The sweep's release of an expired claim, committing while the other move waits.
const released =
  "UPDATE transcription SET status = 'transcribing', status_message = 'batch claim expired', claim_expires_at = NULL WHERE id = $1";

describe.skipIf(!native)('the batch claim racing itself', () => {
  it('should refuse a PUT of segments whose claim is replaced while it checks it (409, nothing stored)', async () => {
    const { t, claimId } = await claimed();
    const answer = await whileOutside(claimedAgain, t, () =>
      api.service(
        'PUT',
        `/transcriptions/${t}/segments`,
        { segments: [{ text: 'lost pass', start_ms: 0, end_ms: 500 }] },
        { 'ml-claim': claimId },
      ),
    );
    expect(answer.status, answer.text).toBe(409);
    expect((await api.service('GET', `/transcriptions/${t}/segments`)).body.items).toEqual([]);
  });

  it('should refuse a PUT of synthesis whose claim is replaced while it checks it (409, nothing stored)', async () => {
    const { meetingId, t, claimId } = await claimed();
    const answer = await whileOutside(claimedAgain, t, () =>
      api.service(
        'PUT',
        `/meetings/${meetingId}/synthesis`,
        { summary: 'lost pass', key_points: [] },
        { 'ml-claim': claimId },
      ),
    );
    expect(answer.status, answer.text).toBe(409);
    expect((await api.request('GET', `/meetings/${meetingId}`, { token: alice })).body.summary).toBeNull();
  });

  it('should not release a claim renewed while the sweep looked at it', async () => {
    const { t, claimId } = await claimed();
    await expire(t);
    const renewal = "UPDATE transcription SET claim_expires_at = now() + interval '10 minutes' WHERE id = $1";
    await whileOutside(renewal, t, () => runSweep(api.sweeper));
    expect(await row(t)).toMatchObject({ status: 'synthesizing', claim_id: claimId, claim_expirations: 0 });
    expect(await expiredHistory(t)).toBe(0);
  });

  it('should release an expired claim once when two sweeps release it at the same time', async () => {
    const { t } = await claimed();
    await expire(t);
    const outside = await outsideClient(api);
    try {
      await outside.query('BEGIN');
      await outside.query('SELECT 1 FROM transcription WHERE id = $1 FOR UPDATE', [t]);
      const sweeps = [runSweep(api.sweeper), runSweep(api.sweeper)];
      await lockWaits(api, 2);
      await outside.query('COMMIT');
      await Promise.all(sweeps);
    } finally {
      await outside.end();
    }
    expect(await row(t)).toMatchObject({ status: 'transcribing', claim_expirations: 1 });
    expect(await expiredHistory(t)).toBe(1);
  });

  it('should refuse a renewal racing the release of its expired claim (409, the take stays released)', async () => {
    const { t, claimId } = await claimed();
    const answer = await whileOutside(released, t, () => claim(t, { 'ml-claim': claimId }));
    expect(answer.status, answer.text).toBe(409);
    expect(await row(t)).toMatchObject({ status: 'transcribing' });
  });

  it('should let the claim of the re-offered take wait for the release to commit, then take it (200)', async () => {
    // The sweep publishes recording.finalized before its release commits: a worker may claim first.
    const { t, claimId } = await claimed();
    const answer = await whileOutside(released, t, () => claim(t));
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.claim_id).not.toBe(claimId);
    expect(await row(t)).toMatchObject({ status: 'synthesizing', claim_id: answer.body.claim_id });
  });
});
