// DELETE /me while object storage fails: the rows are erased, the answer is 202 with the request
// kept (account_erasure names the meetings whose objects remain), and the sweep finishes it once
// storage is back. A GCS emulator of this file's own, so its injected faults touch no other file.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { meetingObjectPrefixes } from '@mi/lib/objects/meeting-objects';
import { startGcsEmulator, type GcsEmulator } from '../../emulators/gcs/server';
import { runSweep } from '../../functions/sweep';
import { startApi, type ApiHarness } from '../harness';
import { rowsNaming } from '../support/rows-naming';

let gcs: GcsEmulator;
let api: ApiHarness;

beforeAll(async () => {
  gcs = await startGcsEmulator();
  api = await startApi({ STORAGE_EMULATOR_HOST: gcs.url });
}, 60_000);
afterAll(async () => {
  await api?.close();
  await gcs?.stop();
});

const faults = (body?: unknown) =>
  fetch(
    `${gcs.url}/_emulator/faults`,
    body
      ? { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }
      : { method: 'DELETE' },
  );

describe('DELETE /me while storage fails', () => {
  it('should answer 202, keep the request, and let the sweep finish it', async () => {
    const token = await api.token('pending-erasure');
    const userId = await api.userId(token);
    const meeting = await api.meeting(token, 'upload');
    expect(
      (
        await api.request('PUT', `/meetings/${meeting}/audio`, {
          token,
          raw: Buffer.alloc(200, 5),
          headers: { 'content-type': 'audio/wav' },
        })
      ).status,
    ).toBe(201);
    const objects = async () =>
      (await Promise.all(meetingObjectPrefixes(meeting).map((p) => api.rt.store.list(p)))).flat();

    expect((await faults({ mode: 'error503', count: 100_000 })).ok).toBe(true);
    let res: Awaited<ReturnType<typeof api.request<'DELETE', '/me'>>>;
    try {
      res = await api.request('DELETE', '/me', { token });
    } finally {
      await faults();
    }
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({ status: 'erasing', detail: expect.any(String) });
    // The rows are gone; the request is kept with the meeting whose objects remain.
    const { rows } = await api.rt.db.query<{ meeting_ids: string[]; rows_erased_at: Date | null }>(
      'test.erasure',
      'SELECT meeting_ids, rows_erased_at FROM account_erasure WHERE user_id = $1',
      [userId],
    );
    expect(rows).toEqual([{ meeting_ids: [meeting], rows_erased_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/) }]);
    expect((await rowsNaming(api.rt.db, [userId, meeting])).sort()).toEqual([
      'account_erasure.meeting_ids: 1',
      'account_erasure.user_id: 1',
    ]);
    expect(await objects()).toHaveLength(1);

    // A sweep that does not take it up yet (the request may still be working) leaves it.
    expect((await runSweep(api.sweeper)).erasuresFinished).toBe(0);
    expect((await runSweep(api.sweeper, { erasureMinAgeMs: 0 })).erasuresFinished).toBe(1);
    expect(await objects()).toEqual([]);
    expect(await rowsNaming(api.rt.db, [userId, meeting])).toEqual([]);
  }, 60_000);
});
