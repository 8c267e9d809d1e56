// The sweep's purge (decisions.md section 6, Lifecycle): a meeting soft-deleted more than
// MEETING_PURGE_AFTER_DAYS ago loses its rows (every table, found through information_schema) and
// its stored objects; younger deletions and live meetings stay; batches are bounded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { meetingObjectPrefixes } from '@mi/lib/objects/meeting-objects';
import { SERVICE } from '@mi/lib/domain/actor';
import { purgeDeletedMeetings } from '@mi/lib/use-cases/meetings';
import { runWorkflow } from '@mi/lib/use-cases/workflow';
import { runSweep } from '../functions/sweep';
import { startApi, type ApiHarness } from './harness';
import { createTake, stopTake, storeLiveSegment } from './recording-fixtures';
import { allIds, rowsNaming } from './support/rows-naming';

let api: ApiHarness;
let alice: string;

beforeAll(async () => {
  api = await startApi({ MEETING_PURGE_AFTER_DAYS: '30' });
  alice = await api.token('purge-alice');
}, 60_000);
afterAll(() => api?.close());

const objectsOf = async (meetingId: string) =>
  (await Promise.all(meetingObjectPrefixes(meetingId).map((p) => api.rt.store.list(p)))).flat().map((o) => o.name);

const purge = (input: { afterDays: number; batch: number; maxBatches: number }) =>
  runWorkflow(api.rt, SERVICE, purgeDeletedMeetings, input);

/** Soft-deletes the meeting through the API, then moves its deletion `days` into the past. */
async function deletedDaysAgo(meetingId: string, days: number): Promise<void> {
  expect((await api.request('DELETE', `/meetings/${meetingId}`, { token: alice })).status).toBe(204);
  await api.rt.db.query(
    'test.backdate',
    `UPDATE meeting SET deleted_at = now() - $2::float8 * interval '1 day' WHERE id = $1`,
    [meetingId, days],
  );
}

/** A recording meeting with a finalized take (segments, composed audio), a transcript and a task on it. */
async function recordedMeeting(): Promise<string> {
  const take = await createTake(api, alice);
  await storeLiveSegment(api, take, 0, 9);
  await stopTake(api, take);
  await runSweep(api.sweeper);
  await api.segments(alice, take.meetingId, 3);
  expect((await api.post(alice, '/tasks', { content: 'follow up', meeting_id: take.meetingId })).status).toBe(201);
  return take.meetingId;
}

async function uploadMeeting(): Promise<string> {
  const id = await api.meeting(alice, 'upload');
  expect(
    (
      await api.request('PUT', `/meetings/${id}/audio`, {
        token: alice,
        raw: Buffer.alloc(300, 1),
        headers: { 'content-type': 'audio/wav' },
      })
    ).status,
  ).toBe(201);
  return id;
}

describe('purge of soft-deleted meetings', () => {
  it('should purge rows and objects of a meeting deleted more than MEETING_PURGE_AFTER_DAYS ago, and only those', async () => {
    const before = await allIds(api.rt.db);
    const old = await recordedMeeting();
    const oldUpload = await uploadMeeting();
    const ids = [...(await allIds(api.rt.db))].filter((id) => !before.has(id));
    const recent = await uploadMeeting();
    const live = await uploadMeeting();
    await deletedDaysAgo(old, 31);
    await deletedDaysAgo(oldUpload, 30.01);
    await deletedDaysAgo(recent, 29);
    const { rows: tasks } = await api.rt.db.query<{ id: string }>(
      'test.tasks',
      'SELECT id FROM task WHERE content = $1',
      ['follow up'],
    );
    // What outlives the meeting: the user, the detached task, and the user's outbox events and
    // idempotency records (gone by retention long before a deletion is 30 days old).
    const { rows: kept } = await api.rt.db.query<{ id: string }>(
      'test.kept',
      `SELECT id::text FROM event_outbox UNION ALL SELECT key::text FROM idempotency_record UNION ALL SELECT id::text FROM task UNION ALL SELECT id::text FROM app_user`,
    );
    const keep = new Set(kept.map((r) => r.id));
    const purgeable = ids.filter((id) => !keep.has(id));
    expect(purgeable).toContain(old);
    expect((await objectsOf(old)).some((o) => o.endsWith('/audio.wav'))).toBe(true);
    expect((await rowsNaming(api.rt.db, [old])).length).toBeGreaterThan(3);

    const counts = await runSweep(api.sweeper);
    expect(counts.purgedMeetings).toBe(2);
    // Nothing of the old meetings is left, in any table (the user and the detached task excepted).
    expect(await rowsNaming(api.rt.db, purgeable)).toEqual([]);
    expect(await objectsOf(old)).toEqual([]);
    expect(await objectsOf(oldUpload)).toEqual([]);
    // The task lives on without its meeting (detached when the meeting was deleted).
    expect((await api.request('GET', `/tasks/${tasks[0].id}`, { token: alice })).body.meeting_id).toBeNull();
    // A younger deletion and a live meeting keep their rows and objects.
    for (const id of [recent, live]) {
      expect(await objectsOf(id), id).toHaveLength(1);
      expect(
        (await api.rt.db.query('test.meeting', 'SELECT 1 FROM meeting WHERE id = $1', [id])).rows,
        id,
      ).toHaveLength(1);
    }
    expect((await api.request('GET', `/meetings/${live}`, { token: alice })).status).toBe(200);
    expect((await runSweep(api.sweeper)).purgedMeetings).toBe(0);
  });

  it('should work in bounded batches, leaving the rest to the next pass', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const id = await uploadMeeting();
      await deletedDaysAgo(id, 40);
      ids.push(id);
    }
    expect(await purge({ afterDays: 30, batch: 2, maxBatches: 2 })).toBe(4);
    const { rows } = await api.rt.db.query<{ id: string }>('test.left', 'SELECT id FROM meeting WHERE id = ANY($1)', [
      ids,
    ]);
    expect(rows).toHaveLength(1);
    expect(await objectsOf(rows[0].id)).toHaveLength(1);
    expect(await purge({ afterDays: 30, batch: 2, maxBatches: 2 })).toBe(1);
    for (const id of ids) expect(await objectsOf(id)).toEqual([]);
  });
});
