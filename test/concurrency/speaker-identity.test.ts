// Merging people while speaker labels are assigned and segments appended (decisions.md section 7,
// "People and speakers"), on native PostgreSQL. Each guard test pins one interleaving: a third
// connection holds a row the first writer needs, the second writer starts, and the row is let go
// once the database shows who waits (polled, never slept on). Removing the guard named in the
// test's title (markers in lib/repositories/person-merge.ts and speaker-label-assignments.ts) makes it fail.
import type { QueryResultRow } from 'pg';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { Queryable } from '@mi/lib/db/pool';
import { assignSpeakerLabel } from '@mi/lib/repositories/speaker-label-assignments';
import type { ApiHarness, TestResponse } from '../harness';
import { until } from '../support/poll';
import { lockWaiters } from '../support/lock-waits';
import { native, withNativeApi } from './native-api';

let api: ApiHarness;
let alice: string;
let aliceId: string;

withNativeApi(async (started) => {
  api = started;
  alice = await api.token('alice');
  aliceId = await api.userId(alice);
});

let seed = 5;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
const randomVector = () => Array.from({ length: 192 }, () => rand());
const sql = async <R extends QueryResultRow = Record<string, unknown>>(text: string, params: unknown[] = []) =>
  (await api.rt.db.query<R>('test', text, params)).rows;
const person = async () =>
  (await api.post(alice, '/people', { display_name: `p-${randomUUID().slice(0, 8)}` })).body.id as string;
const merge = (keep: string, other: string) => api.post(alice, `/people/${keep}/merge`, { person_id: other });
const assign = (m: string, speaker_label: string, person_id: string) =>
  api.post(alice, `/meetings/${m}/speaker-labels`, { speaker_label, person_id });
let at = 0;
const append = (t: string, segs: { speaker_label: string; person_id?: string }[]) =>
  api.request('POST', `/transcriptions/${t}/segments`, {
    token: api.serviceToken,
    body: { segments: segs.map((s) => ({ text: 'x', start_ms: at++, feature_vector: randomVector(), ...s })) },
  });
/** A recording meeting with one transcription holding `n` segments of each label (with embeddings). */
async function meetingWith(labels: string[], n = 3): Promise<{ m: string; t: string }> {
  const m = await api.meeting(alice, 'recording');
  const t = (await api.post(alice, `/meetings/${m}/transcriptions`)).body.id;
  expect(
    (
      await append(
        t,
        labels.flatMap((speaker_label) => Array.from({ length: n }, () => ({ speaker_label }))),
      )
    ).status,
  ).toBe(204);
  return { m, t };
}

/** A request whose answer can be polled for. */
function started(request: Promise<TestResponse>) {
  const state: { answer?: TestResponse } = {};
  const done = request.then((a) => (state.answer = a));
  return {
    done,
    get answered() {
      return state.answer !== undefined;
    },
  };
}

/** A connection holding rows locked (FOR UPDATE) until released. */
async function holdRows(select: string, params: unknown[]): Promise<{ release(): Promise<void> }> {
  const client = new pg.Client({ connectionString: api.rt.db.pool.options.connectionString });
  await client.connect();
  await client.query('BEGIN');
  const { rowCount } = await client.query(`${select} FOR UPDATE`, params);
  expect(rowCount).toBeGreaterThan(0);
  return { release: async () => (await client.query('COMMIT'), await client.end()) };
}

/**
 * Every segment of the user's meetings that is attributed and has an embedding is a sample of its
 * person (and no other segment is), and every person's model is the one their samples give.
 */
async function expectConsistent(): Promise<void> {
  const mismatched = await sql(
    `SELECT s.id, s.person_id, v.person_id AS sample_of FROM transcript_segment s
     JOIN transcription t ON t.id = s.transcription_id JOIN meeting m ON m.id = t.meeting_id
     LEFT JOIN voice_sample v ON v.segment_id = s.id
     WHERE m.user_id = $1 AND v.person_id IS DISTINCT FROM (CASE WHEN s.feature_vector IS NOT NULL THEN s.person_id END)`,
    [aliceId],
  );
  expect(mismatched).toEqual([]);
  const models = await sql<{ id: string; count: number; samples: number; cosine: number | null }>(
    `SELECT p.id, p.voice_sample_count AS count, count(v.segment_id)::int AS samples,
       CASE WHEN count(v.segment_id) > 0 THEN 1 - (p.voice_vector <=> l2_normalize(sum(v.embedding))) END AS cosine
     FROM person p LEFT JOIN voice_sample v ON v.person_id = p.id WHERE p.user_id = $1 GROUP BY p.id`,
    [aliceId],
  );
  for (const r of models) {
    expect(r.count, r.id).toBe(r.samples);
    if (r.samples) expect(r.cosine, r.id).toBeGreaterThan(0.99999);
  }
}

describe.skipIf(!native)('merging people races speaker-label writers', () => {
  it("should not deadlock when a merge and an assignment wait on each other's rows", async () => {
    const [keep, other, target] = [await person(), await person(), await person()];
    const { m } = await meetingWith(['L']);
    expect((await assign(m, 'L', other)).status).toBe(200);
    const retriesBefore = api.served.retries;

    // The assignment of L (other → target) relabels L's segments, then waits at L's assignment row.
    const hold = await holdRows('SELECT 1 FROM meeting_speaker_label WHERE meeting_id = $1', [m]);
    const assigning = started(assign(m, 'L', target));
    await until('the assignment waits', async () => (await lockWaiters(api)) === 1);
    // The merge of `other` needs those segments; unguarded it first locks `other`, which the
    // assignment locks next to recount that person's model: each waits for the other.
    const merging = started(merge(keep, other));
    await until('the merge waits', async () => (await lockWaiters(api)) === 2);
    await hold.release();
    await Promise.all([assigning.done, merging.done]);

    expect(assigning.answered && merging.answered).toBe(true);
    expect((await assigning.done).status).toBe(200);
    expect((await merging.done).status).toBe(200);
    // No transaction was aborted as a deadlock victim and retried.
    expect(api.served.retries - retriesBefore).toBe(0);
    expect(await sql('SELECT person_id FROM meeting_speaker_label WHERE meeting_id = $1', [m])).toEqual([
      { person_id: target },
    ]);
    await expectConsistent();
  });

  /**
   * `change` (a speaker-identity change of L's segments, attributed to `other`) waits at those
   * segments, held from outside; a merge of `other` starts behind it. Unguarded, the merge locks
   * `other` and waits at the same segments, and the change, let through, then waits for `other`
   * to recount its model: each waits for the other, and the database aborts one as a deadlock.
   */
  async function changeRacingMerge(change: (m: string, segment: string) => Promise<TestResponse>, status: number) {
    const [keep, other, target] = [await person(), await person(), await person()];
    const { m, t } = await meetingWith(['L', 'M']);
    expect((await assign(m, 'L', other)).status).toBe(200);
    expect((await assign(m, 'M', target)).status).toBe(200);
    const [segment] = await sql<{ id: string }>(
      'SELECT id FROM transcript_segment WHERE transcription_id = $1 AND speaker_label = $2 ORDER BY id LIMIT 1',
      [t, 'L'],
    );
    const retriesBefore = api.served.retries;

    const hold = await holdRows('SELECT 1 FROM transcript_segment WHERE transcription_id = $1 AND speaker_label = $2', [
      t,
      'L',
    ]);
    const changing = started(change(m, segment.id));
    await until('the change waits', async () => (await lockWaiters(api)) === 1);
    const merging = started(merge(keep, other));
    await until('the merge waits', async () => (await lockWaiters(api)) === 2);
    await hold.release();
    const [changed, merged] = await Promise.all([changing.done, merging.done]);

    expect(changed.status).toBe(status);
    expect(merged.status).toBe(200);
    // No transaction was aborted as a deadlock victim and retried.
    expect(api.served.retries - retriesBefore).toBe(0);
    await expectConsistent();
  }

  it("should not deadlock when a merge and a label's unassignment wait on each other's rows", async () => {
    await changeRacingMerge((m) => api.request('DELETE', `/meetings/${m}/speaker-labels/L`, { token: alice }), 204);
  });

  it("should not deadlock when a merge and a segment's move to another speaker wait on each other's rows", async () => {
    await changeRacingMerge(
      (_m, segment) =>
        api.request('PATCH', `/transcript-segments/${segment}`, { token: alice, body: { speaker_label: 'M' } }),
      200,
    );
  });

  it('should lose no sample appended for the other person during a merge', async () => {
    const [keep, other] = [await person(), await person()];
    const { t } = await meetingWith(['A']);
    expect((await append(t, [{ speaker_label: 'B', person_id: other }])).status).toBe(204);
    const task = (await api.post(alice, '/tasks', { content: 'ask', assigned_to: other })).body.id;

    // The merge has moved the attributions and samples and waits to move the task.
    const hold = await holdRows('SELECT 1 FROM task WHERE id = $1', [task]);
    const merging = started(merge(keep, other));
    await until('the merge waits', async () => (await lockWaiters(api)) === 1);
    // The ML service appends a segment it attributes to the other person.
    const appending = started(append(t, [{ speaker_label: 'B', person_id: other }]));
    await until('the append waits or is answered', async () => appending.answered || (await lockWaiters(api)) === 2);
    await hold.release();
    const [appended, merged] = await Promise.all([appending.done, merging.done]);

    expect(merged.status).toBe(200);
    // The append waited for the merge, then followed it: attributed to the kept person, never refused.
    expect(appended.status).toBe(204);
    const segments = await sql(
      'SELECT person_id FROM transcript_segment WHERE transcription_id = $1 AND speaker_label = $2',
      [t, 'B'],
    );
    expect(segments).toEqual(Array(2).fill({ person_id: keep }));
    await expectConsistent();
  });

  /**
   * An append in flight holds its transcription (FOR UPDATE) and has written a segment of label L
   * attributed as the assignments stood (`personId`), uncommitted, while `change` (an assignment
   * of L or its removal) runs. The change waits for it, or (unguarded) is answered without seeing
   * it. Returns the change's answer and the attributions of L's segments after both.
   */
  async function changeRacingAppend(
    personId: string | null,
    setup: (m: string) => Promise<void>,
    change: (m: string) => Promise<TestResponse>,
  ) {
    const { m, t } = await meetingWith(['L']);
    await setup(m);
    const outside = new pg.Client({ connectionString: api.rt.db.pool.options.connectionString });
    await outside.connect();
    let answer: TestResponse;
    try {
      await outside.query('BEGIN');
      await outside.query('SELECT 1 FROM transcription WHERE id = $1 FOR UPDATE', [t]);
      await outside.query(
        `INSERT INTO transcript_segment (transcription_id, text, start_ms, speaker_label, person_id)
         VALUES ($1, 'x', $2, 'L', $3)`,
        [t, at++, personId],
      );
      const changing = started(change(m));
      await until('the change waits or is answered', async () => changing.answered || (await lockWaiters(api)) > 0);
      await outside.query('COMMIT');
      answer = await changing.done;
    } finally {
      await outside.end();
    }
    const people = await sql<{ person_id: string | null }>(
      'SELECT person_id FROM transcript_segment WHERE transcription_id = $1 AND speaker_label = $2',
      [t, 'L'],
    );
    return { answer, people: people.map((r) => r.person_id) };
  }

  it('should attribute a segment an append commits while its label is being assigned', async () => {
    const p = await person();
    const { answer, people } = await changeRacingAppend(
      null,
      async () => undefined,
      (m) => assign(m, 'L', p),
    );
    expect(answer.status).toBe(200);
    expect(people).toEqual(Array(4).fill(p));
  });

  it('should detach a segment an append commits while its label assignment is being removed', async () => {
    const p = await person();
    const { answer, people } = await changeRacingAppend(
      p,
      async (m) => expect((await assign(m, 'L', p)).status).toBe(200),
      (m) => api.request('DELETE', `/meetings/${m}/speaker-labels/L`, { token: alice }),
    );
    expect(answer.status).toBe(204);
    expect(people).toEqual(Array(4).fill(null));
  });

  it('should attribute the segment of an append that starts while its label is being assigned', async () => {
    const p = await person();
    const { m, t } = await meetingWith(['L']);
    const outside = new pg.Client({ connectionString: api.rt.db.pool.options.connectionString });
    await outside.connect();
    try {
      // The assignment of L to p, run in the outside transaction and not yet committed.
      await outside.query('BEGIN');
      const tx: Queryable = { query: (_name, text, params) => outside.query(text, params) };
      await assignSpeakerLabel(tx, aliceId, m, 'L', p);
      const appending = started(append(t, [{ speaker_label: 'L' }]));
      await until('the append waits or is answered', async () => appending.answered || (await lockWaiters(api)) > 0);
      await outside.query('COMMIT');
      expect((await appending.done).status).toBe(204);
    } finally {
      await outside.end();
    }
    const people = await sql('SELECT person_id FROM transcript_segment WHERE transcription_id = $1', [t]);
    expect(people).toEqual(Array(4).fill({ person_id: p }));
    await expectConsistent();
  });

  it("should add both appends' samples to a person's model when they wait on the person's row", async () => {
    const p = await person();
    const [a, b] = [await meetingWith([]), await meetingWith([])];
    // An edit of the person holds its row (no key change: the samples' foreign keys do not wait).
    const outside = new pg.Client({ connectionString: api.rt.db.pool.options.connectionString });
    await outside.connect();
    try {
      await outside.query('BEGIN');
      await outside.query('UPDATE person SET updated_at = now() WHERE id = $1', [p]);
      const appends = [a.t, b.t].map((t) => append(t, Array(3).fill({ speaker_label: 'P', person_id: p })));
      await until('both appends wait', async () => (await lockWaiters(api)) === 2);
      await outside.query('COMMIT');
      expect((await Promise.all(appends)).map((r) => r.status)).toEqual([204, 204]);
    } finally {
      await outside.end();
    }
    expect(await sql('SELECT voice_sample_count FROM person WHERE id = $1', [p])).toEqual([{ voice_sample_count: 6 }]);
    await expectConsistent();
  });

  it('should keep every sample through merges, assignments and appends running at once (10 rounds)', async () => {
    for (let round = 0; round < 10; round++) {
      const people = [await person(), await person(), await person(), await person()];
      const meetings = [await meetingWith(['S0', 'S1']), await meetingWith(['S0', 'S1'])];
      expect((await assign(meetings[0].m, 'S0', people[1])).status).toBe(200);
      const answers = await Promise.all([
        merge(people[0], people[1]),
        merge(people[2], people[3]),
        assign(meetings[0].m, 'S1', people[1]),
        assign(meetings[1].m, 'S0', people[3]),
        assign(meetings[1].m, 'S1', people[0]),
        append(meetings[0].t, [{ speaker_label: 'S0' }, { speaker_label: 'S1' }]),
        append(meetings[1].t, [{ speaker_label: 'S0' }, { speaker_label: 'S1' }]),
      ]);
      // An assignment to a person merged away first finds no such person (422); nothing fails otherwise.
      expect(
        answers.map((a) => a.status).filter((s) => s !== 200 && s !== 204 && s !== 422),
        `round ${round}`,
      ).toEqual([]);
      expect(answers[0].status).toBe(200);
      expect(answers[1].status).toBe(200);
      await expectConsistent();
    }
  });
});
