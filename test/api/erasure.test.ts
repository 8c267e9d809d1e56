// DELETE /me (decisions.md section 6, Lifecycle): every row of the user and every stored object of
// their meetings are gone afterwards, the other users' data is exactly as it was, the request is
// idempotent, an erasure cut short is finished by the sweep, and the identity signing in again
// starts with an empty account. Rows are checked over every table and every uuid, uuid[] and text
// column that information_schema lists, so a new table cannot be forgotten.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eraseRowBatch, requestErasure } from '@mi/lib/repositories/erasure';
import { meetingObjectPrefixes } from '@mi/lib/objects/meeting-objects';
import { runSweep } from '../../functions/sweep';
import { startApi, type ApiHarness } from '../harness';
import { createTake, expireGapDeadline, stopTake, storeLiveSegment } from '../recording-fixtures';
import { changedTables, snapshotter, type Snapshot } from '../support/db-snapshot';
import { allIds, rowsNaming } from '../support/rows-naming';
import { createFixtures, createWorld, type World } from '../support/fixtures';
import { fetchDoc } from '../support/openapi';

let api: ApiHarness;
let world: World;
let snapshot: () => Promise<Snapshot>;

beforeAll(async () => {
  api = await startApi();
  world = await createWorld(api, await fetchDoc(api));
  // The bystanders' records: erasing another account must leave them exactly as they are.
  await createFixtures(world);
  await createFixtures(world, undefined, world.other);
  await runSweep(api.sweeper); // finalizes their due takes now, so later sweeps leave them alone
  snapshot = await snapshotter(api.rt.db);
}, 120_000);
afterAll(() => api?.close());

async function objectsOf(meetingIds: string[]): Promise<string[]> {
  const lists = await Promise.all(meetingIds.flatMap(meetingObjectPrefixes).map((p) => api.rt.store.list(p)));
  return lists.flat().map((o) => o.name);
}

const sweep = (opts: { erasureMinAgeMs?: number } = {}) => runSweep(api.sweeper, { erasureMinAgeMs: 0, ...opts });

/**
 * An account with a record of every kind (the authorization matrix's fixtures, through the API),
 * a finalized take with composed audio, a take still recording, a stopped take with a stray gap
 * object, and a soft-deleted meeting with an upload. Returns its token, user id, every id it added
 * to the database, and its meetings.
 */
async function fullAccount(name: string) {
  const before = await allIds(api.rt.db);
  const token = await api.token(name);
  const userId = await api.userId(token);
  await createFixtures(world, undefined, { token, userId });
  const finalized = await createTake(api, token);
  await storeLiveSegment(api, finalized, 0, 9);
  await storeLiveSegment(api, finalized, 10, 19);
  await stopTake(api, finalized);
  expect((await runSweep(api.sweeper, { erasureMinAgeMs: 0 })).finalized).toBeGreaterThanOrEqual(1);
  const live = await createTake(api, token);
  await storeLiveSegment(api, live, 0, 4);
  const stopped = await createTake(api, token);
  await storeLiveSegment(api, stopped, 0, 4);
  await api.rt.store.write(`recordings/${stopped.meetingId}/v${stopped.audioVersion}/gaps/stray`, Buffer.from('stray'));
  await stopTake(api, stopped);
  const deleted = await api.meeting(token, 'upload');
  expect(
    (
      await api.request('PUT', `/meetings/${deleted}/audio`, {
        token,
        raw: Buffer.alloc(500, 3),
        headers: { 'content-type': 'audio/wav' },
      })
    ).status,
  ).toBe(201);
  expect((await api.request('DELETE', `/meetings/${deleted}`, { token })).status).toBe(204);
  // An idempotency record of the user (principal = user id) and outbox events.
  await api.post(token, '/meetings', { title: 'keyed', source_type: 'text' });
  const ids = [...(await allIds(api.rt.db))].filter((id) => !before.has(id));
  const { rows } = await api.rt.db.query<{ id: string }>(
    'test.meetings_of',
    'SELECT id FROM meeting WHERE user_id = $1',
    [userId],
  );
  return { token, userId, ids: [...new Set([userId, ...ids])], meetingIds: rows.map((r) => r.id), live };
}

describe('DELETE /me', () => {
  it('should erase every row and every stored object of the user, leave everyone else as they were, and stop a live take first', async () => {
    const before = await snapshot();
    const account = await fullAccount(`erase-${randomUUID().slice(0, 8)}`);
    // The test can fail: the account's rows and objects are there.
    expect((await rowsNaming(api.rt.db, account.ids)).length).toBeGreaterThan(10);
    const objects = await objectsOf(account.meetingIds);
    expect(objects.some((o) => o.startsWith('uploads/'))).toBe(true);
    expect(objects.some((o) => o.endsWith('/audio.wav'))).toBe(true);
    expect(objects.some((o) => o.includes('/gaps/'))).toBe(true);

    const res = await api.request('DELETE', '/me', { token: account.token });
    expect(res.status, res.text).toBe(204);
    expect(res.text).toBe('');

    expect(await rowsNaming(api.rt.db, account.ids)).toEqual([]);
    expect(await objectsOf(account.meetingIds)).toEqual([]);
    // Every table holds exactly what it held before the account existed: no row left, none touched.
    expect(changedTables(before, await snapshot())).toEqual([]);
    expect((await api.request('GET', '/me', { token: world.owner.token })).body.id).toBe(world.owner.userId);
  });

  it('should let the same identity sign in again to an empty account, and answer a repeated DELETE /me with 204', async () => {
    const name = `again-${randomUUID().slice(0, 8)}`;
    const token = await api.token(name);
    const first = await api.userId(token);
    const meeting = await api.meeting(token);
    expect((await api.request('DELETE', '/me', { token })).status).toBe(204);

    const me = await api.request('GET', '/me', { token });
    expect(me.status).toBe(200);
    expect(me.body.id).not.toBe(first);
    for (const path of ['/meetings', '/people', '/tasks', '/notes', '/threads']) {
      const list = await api.request('GET', path, { token });
      expect(list.status, path).toBe(200);
      expect(list.body.items, path).toEqual([]);
    }
    expect((await api.request('GET', `/meetings/${meeting}`, { token })).status).toBe(404);
    // Idempotent: erasing the (empty) account again succeeds and leaves nothing.
    expect((await api.request('DELETE', '/me', { token })).status).toBe(204);
    expect((await api.request('DELETE', '/me', { token })).status).toBe(204);
    expect(await rowsNaming(api.rt.db, [first, me.body.id])).toEqual([]);
  });

  it('should be finished by the sweep when the request stopped after recording it, or halfway', async () => {
    for (const cut of ['recorded', 'rows erased'] as const) {
      const account = await fullAccount(`cut-${randomUUID().slice(0, 8)}`);
      // What DELETE /me does before it is cut short.
      await api.rt.db.withTransaction((tx) => requestErasure(tx, account.userId));
      if (cut === 'rows erased')
        while ((await api.rt.db.withTransaction((tx) => eraseRowBatch(tx, account.userId))) === 'more');
      expect(await objectsOf(account.meetingIds), cut).not.toEqual([]);

      // A sweep that does not take the request up yet (it may still be running) finalizes none of its takes.
      const waiting = await runSweep(api.sweeper, { erasureMinAgeMs: 3_600_000 });
      expect(waiting.erasuresFinished, cut).toBe(0);
      const counts = await sweep();
      expect(counts.erasuresFinished, cut).toBe(1);
      expect(await rowsNaming(api.rt.db, account.ids), cut).toEqual([]);
      expect(await objectsOf(account.meetingIds), cut).toEqual([]);
    }
  });

  it('should stop the take a live instance records first, and finalize no take of an account being erased', async () => {
    const account = await fullAccount(`stop-${randomUUID().slice(0, 8)}`);
    await api.rt.db.withTransaction((tx) => requestErasure(tx, account.userId));
    const { rows } = await api.rt.db.query<{ state: string; stop_reason: string; owner_instance: string | null }>(
      'test.take',
      'SELECT state, stop_reason, owner_instance FROM recording WHERE meeting_id = $1 AND audio_version = $2',
      [account.live.meetingId, account.live.audioVersion],
    );
    // The owning instance sees a take it no longer owns and that is not recording: it lets go.
    expect(rows[0]).toEqual({ state: 'stopped', stop_reason: 'user', owner_instance: null });
    await expireGapDeadline(api, account.live);
    await runSweep(api.sweeper, { erasureMinAgeMs: 3_600_000 });
    const { rows: takes } = await api.rt.db.query<{ n: number }>(
      'test.finalized',
      `SELECT count(*)::int AS n FROM recording r JOIN meeting m ON m.id = r.meeting_id WHERE m.user_id = $1 AND r.state IN ('finalizing', 'finalized')`,
      [account.userId],
    );
    expect(takes[0].n).toBe(2); // the take and the fixture take finalized before the request, no other
    expect((await objectsOf([account.live.meetingId])).filter((o) => o.endsWith('/audio.wav'))).toEqual([]);
    expect((await sweep()).erasuresFinished).toBe(1);
    expect(await rowsNaming(api.rt.db, account.ids)).toEqual([]);
  });

  it('should refuse DELETE /me without a user token, changing nothing', async () => {
    const before = await snapshot();
    expect((await api.request('DELETE', '/me')).status).toBe(401);
    const service = await api.request('DELETE', '/me', { token: api.serviceToken });
    expect(service.status).toBe(403);
    expect(service.headers.get('content-type')).toContain('application/problem+json');
    expect(changedTables(before, await snapshot())).toEqual([]);
  });
});
