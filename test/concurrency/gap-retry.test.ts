// A gap upload retried while the sweep starts finalizing its take (docs/retries.md): the retry
// passed the route's check while the take was stopped and waits for the take's row, which the
// sweep's claim (stopped → finalizing) holds; once it commits, the identical retry is still 200
// and a new range is 410. The order is pinned by an outside transaction (support/lock-waits.ts).
import { describe, expect, it } from 'vitest';
import { gapPrefix } from '@mi/lib/objects/take-objects';
import { listManifest } from '@mi/lib/repositories/manifest';
import type { ApiHarness } from '../harness';
import { native, withNativeApi } from './native-api';
import { lockWaits, outsideClient } from '../support/lock-waits';
import { createTake, framesBytes, stopTake, storeLiveSegment, type Take } from '../recording-fixtures';

let api: ApiHarness;
let alice: string;

withNativeApi(async (started) => {
  api = started;
  alice = await api.token('gap-retry-alice');
});

const put = (t: Take, start: number, end: number) =>
  api.request('PUT', `/meetings/${t.meetingId}/recording/audio/${start}-${end}?audio_version=${t.audioVersion}`, {
    token: alice,
    raw: framesBytes(start, end),
    headers: { 'content-type': 'application/octet-stream' },
  });

/** Runs the upload while an outside transaction holds the take's row and commits the sweep's claim under it. */
async function racingTheClaim(take: Take, upload: () => ReturnType<typeof put>) {
  const outside = await outsideClient(api);
  try {
    await outside.query('BEGIN');
    await outside.query('SELECT 1 FROM recording WHERE meeting_id = $1 AND audio_version = $2 FOR UPDATE', [
      take.meetingId,
      take.audioVersion,
    ]);
    const answer = upload();
    await lockWaits(api);
    // The sweep's claim (lib/repositories/finalize.ts claimForFinalize), committed while the upload waits.
    await outside.query(
      `UPDATE recording SET state = 'finalizing', updated_at = now() WHERE meeting_id = $1 AND audio_version = $2 AND state = 'stopped'`,
      [take.meetingId, take.audioVersion],
    );
    await outside.query('COMMIT');
    return await answer;
  } finally {
    await outside.end();
  }
}

describe.skipIf(!native)('gap upload retried while the take is being claimed for finalizing', () => {
  it('should answer 200 to the identical range and 410 to a new range whose check passed while the take was stopped', async () => {
    const take = await createTake(api, alice);
    await storeLiveSegment(api, take, 0, 9);
    await storeLiveSegment(api, take, 20, 29);
    await stopTake(api, take);
    const first = await put(take, 10, 19);
    expect(first.status).toBe(201);

    const retry = await racingTheClaim(take, () => put(take, 10, 19));
    expect(retry.status, retry.text).toBe(200);
    expect(retry.body).toEqual(first.body);

    const stoppedAgain = async () =>
      api.rt.db.query('test.unclaim', `UPDATE recording SET state = 'stopped' WHERE meeting_id = $1`, [take.meetingId]);
    await stoppedAgain();
    const tail = await racingTheClaim(take, () => put(take, 30, 39));
    expect(tail.status, tail.text).toBe(410);
    expect(tail.body.detail).toMatch(/is finalizing: every missing range was filled/);
    expect((await listManifest(api.rt.db, take.meetingId, 1)).map((r) => r.start_sequence)).toEqual([0, 10, 20]);
    // The refused range's object (written before the take's lock) is deleted again.
    expect(await api.rt.store.list(gapPrefix(take.meetingId, take.audioVersion))).toHaveLength(1);
  });
});
