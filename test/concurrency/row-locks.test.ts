// Writes that read their row FOR UPDATE before acting on what they read, on native PostgreSQL:
// an outside transaction changes the row (a meeting or task soft-deleted, a sub-task or segment
// removed, a transcription claimed) and holds it; the request is sent, and the outside
// transaction commits once the request waits for that row (or, unguarded, has been answered).
// Guarded, the write waits and then sees the change: 404 or 409, nothing written. Without the
// lock it acts on the row as it read it.
import { randomUUID } from 'node:crypto';
import type { QueryResultRow } from 'pg';
import { describe, expect, it } from 'vitest';
import type { ApiHarness } from '../harness';
import { native, withNativeApi } from './native-api';
import { lockWaiters, outsideClient } from '../support/lock-waits';

let api: ApiHarness;
let alice: string;

withNativeApi(async (started) => {
  api = started;
  alice = await api.token('alice');
});

const sql = async <R extends QueryResultRow = Record<string, unknown>>(text: string, params: unknown[] = []) =>
  (await api.rt.db.query<R>('test', text, params)).rows;

/** Sends `request` while an outside transaction has run `change` on `id`; the answer. */
async function raceOutside(change: string, id: string, request: () => Promise<{ status: number; text: string }>) {
  const outside = await outsideClient(api);
  try {
    await outside.query('BEGIN');
    await outside.query(change, [id]);
    let answered = false;
    const answer = request().finally(() => (answered = true));
    await expect.poll(async () => answered || (await lockWaiters(api)) > 0, { timeout: 20_000 }).toBe(true);
    await outside.query('COMMIT');
    return await answer;
  } finally {
    await outside.end();
  }
}

/** As raceOutside, where the change removes the record: 404 expected. */
async function raceRemoval(remove: string, id: string, request: () => Promise<{ status: number; text: string }>) {
  const { status, text } = await raceOutside(remove, id, request);
  expect(status, text).toBe(404);
}

const deleteMeeting = 'UPDATE meeting SET deleted_at = now() WHERE id = $1';

/** A recording meeting with a transcription holding one segment labelled S0 and one S1. */
async function meetingWithSegments() {
  const m = await api.meeting(alice, 'recording');
  const t = (await api.post(alice, `/meetings/${m}/transcriptions`)).body.id as string;
  const segments = ['S0', 'S1'].map((speaker_label, i) => ({ speaker_label, text: 'x', start_ms: i * 1000 }));
  const appended = await api.request('POST', `/transcriptions/${t}/segments`, {
    token: api.serviceToken,
    body: { segments },
  });
  expect(appended.status, appended.text).toBe(204);
  const person = (await api.post(alice, '/people', { display_name: `p ${m}` })).body.id as string;
  const ids = await sql<{ id: string }>(
    'SELECT id FROM transcript_segment WHERE transcription_id = $1 ORDER BY speaker_label',
    [t],
  );
  return { m, person, segment: ids[0].id };
}

describe.skipIf(!native)('writes racing a change of their row', () => {
  it('should answer 404 to a PATCH of a sub-task whose delete commits meanwhile', async () => {
    const task = (await api.post(alice, '/tasks', { content: 'parent' })).body.id;
    const sub = (await api.post(alice, `/tasks/${task}/sub-tasks`, { content: 'doomed' })).body.id;
    await raceRemoval('DELETE FROM sub_task WHERE id = $1', sub, () =>
      api.request('PATCH', `/sub-tasks/${sub}`, { token: alice, body: { content: 'revived' } }),
    );
    const events = await sql(
      `SELECT 1 FROM event_outbox WHERE payload->>'entity' = 'sub_task' AND payload->>'id' = $1
         AND payload->>'action' = 'updated'`,
      [sub],
    );
    expect(events).toEqual([]);
  });

  it("should answer 404 to a PATCH of a sub-task whose task's delete commits meanwhile", async () => {
    const task = (await api.post(alice, '/tasks', { content: 'parent' })).body.id;
    const sub = (await api.post(alice, `/tasks/${task}/sub-tasks`, { content: 'hidden' })).body.id;
    await raceRemoval('UPDATE task SET deleted_at = now() WHERE id = $1', task, () =>
      api.request('PATCH', `/sub-tasks/${sub}`, { token: alice, body: { content: 'revived' } }),
    );
    expect(await sql('SELECT content FROM sub_task WHERE id = $1', [sub])).toEqual([{ content: 'hidden' }]);
  });

  it("should answer 404 to a DELETE of a sub-task whose task's delete commits meanwhile, and emit nothing", async () => {
    const task = (await api.post(alice, '/tasks', { content: 'parent' })).body.id;
    const sub = (await api.post(alice, `/tasks/${task}/sub-tasks`, { content: 'hidden' })).body.id;
    await raceRemoval('UPDATE task SET deleted_at = now() WHERE id = $1', task, () =>
      api.request('DELETE', `/sub-tasks/${sub}`, { token: alice }),
    );
    expect(await sql('SELECT content FROM sub_task WHERE id = $1', [sub])).toEqual([{ content: 'hidden' }]);
    const deleted = "SELECT 1 FROM event_outbox WHERE payload->>'id' = $1 AND payload->>'action' = 'deleted'";
    expect(await sql(deleted, [sub])).toEqual([]);
  });

  it("should answer 404 to moving a segment to another speaker while the segment's removal commits", async () => {
    const { segment } = await meetingWithSegments();
    await raceRemoval('DELETE FROM transcript_segment WHERE id = $1', segment, () =>
      api.request('PATCH', `/transcript-segments/${segment}`, { token: alice, body: { speaker_label: 'S1' } }),
    );
  });

  it('should answer 404 to assigning a speaker label of a meeting whose delete commits meanwhile', async () => {
    const { m, person } = await meetingWithSegments();
    await raceRemoval(deleteMeeting, m, () =>
      api.post(alice, `/meetings/${m}/speaker-labels`, { speaker_label: 'S0', person_id: person }),
    );
    expect(await sql('SELECT 1 FROM meeting_speaker_label WHERE meeting_id = $1', [m])).toEqual([]);
  });

  it('should answer 404 to removing a speaker assignment of a meeting whose delete commits meanwhile', async () => {
    const { m, person } = await meetingWithSegments();
    const assigned = await api.post(alice, `/meetings/${m}/speaker-labels`, { speaker_label: 'S0', person_id: person });
    expect(assigned.status, assigned.text).toBe(200);
    await raceRemoval(deleteMeeting, m, () =>
      api.request('DELETE', `/meetings/${m}/speaker-labels/S0`, { token: alice }),
    );
    expect(await sql('SELECT person_id FROM meeting_speaker_label WHERE meeting_id = $1', [m])).toEqual([
      { person_id: person },
    ]);
  });

  it('should answer 404 to a transcription of a meeting whose delete commits meanwhile', async () => {
    const m = await api.meeting(alice, 'recording');
    await raceRemoval(deleteMeeting, m, () => api.post(alice, `/meetings/${m}/transcriptions`));
    expect(await sql('SELECT 1 FROM transcription WHERE meeting_id = $1', [m])).toEqual([]);
  });

  it('should refuse an append racing the completion of its transcription, storing nothing', async () => {
    const m = await api.meeting(alice, 'recording');
    const t = (await api.post(alice, `/meetings/${m}/transcriptions`)).body.id as string;
    const complete = "UPDATE transcription SET status = 'completed' WHERE id = $1";
    const answer = await raceOutside(complete, t, () =>
      api.request('POST', `/transcriptions/${t}/segments`, {
        token: api.serviceToken,
        body: { segments: [{ text: 'late tail', start_ms: 4000, end_ms: 5000 }] },
      }),
    );
    expect(answer.status, answer.text).toBe(409);
    expect(await sql('SELECT 1 FROM transcript_segment s WHERE s.transcription_id = $1', [t])).toEqual([]);
  });

  it('should answer 404 to a synthesis of a meeting whose delete commits meanwhile', async () => {
    const m = await api.meeting(alice, 'recording');
    await raceRemoval(deleteMeeting, m, () =>
      api.request('PUT', `/meetings/${m}/synthesis`, {
        token: api.serviceToken,
        body: { summary: 'late', key_points: [] },
      }),
    );
    expect(await sql('SELECT summary FROM meeting WHERE id = $1', [m])).toEqual([{ summary: null }]);
  });

  it('should answer 404 to a sub-task of a task whose delete commits meanwhile', async () => {
    const task = (await api.post(alice, '/tasks', { content: 'doomed' })).body.id;
    await raceRemoval('UPDATE task SET deleted_at = now() WHERE id = $1', task, () =>
      api.post(alice, `/tasks/${task}/sub-tasks`, { content: 'orphan?' }),
    );
    expect(await sql('SELECT 1 FROM sub_task WHERE task_id = $1', [task])).toEqual([]);
  });

  it('should delete a child task whose creation commits while its parent is being deleted', async () => {
    const parent = (await api.post(alice, '/tasks', { content: 'parent' })).body.id as string;
    const child = randomUUID();
    // A child's creation holds its parent FOR SHARE (tasks.ts) until it commits.
    const create = `WITH parent AS (SELECT id, user_id FROM task WHERE id = $1 FOR SHARE)
      INSERT INTO task (id, user_id, content, parent_task_id) SELECT '${child}', user_id, 'child', id FROM parent`;
    const answer = await raceOutside(create, parent, () => api.request('DELETE', `/tasks/${parent}`, { token: alice }));
    expect(answer.status, answer.text).toBe(204);
    expect(await sql('SELECT id FROM task WHERE id = ANY($1) AND deleted_at IS NULL', [[parent, child]])).toEqual([]);
  });

  it('should refuse a second batch claim of a transcription claimed while the first waited', async () => {
    const m = await api.meeting(alice, 'recording');
    const t = (await api.post(alice, `/meetings/${m}/transcriptions`)).body.id as string;
    const patch = (status: string) =>
      api.request('PATCH', `/transcriptions/${t}`, { token: api.serviceToken, body: { status } });
    expect((await patch('transcribing')).status).toBe(200);
    const claim = "UPDATE transcription SET status = 'synthesizing' WHERE id = $1";
    const answer = await raceOutside(claim, t, () => patch('synthesizing'));
    expect(answer.status, answer.text).toBe(409);
  });
});
